import type { Pool } from 'mysql2/promise';
import { quoteIdentifier } from '../platform/mysql.ts';

/**
 * Reference DDL of the owner outboxes, for development and tests only. In production these tables belong to
 * wallet-service, room-service and activity-service; notice-service only reads them.
 */
export function ownerFixtureStatements(walletDatabase: string, roomDatabase: string, activityDatabase: string): string[] {
  const wallet = quoteIdentifier(walletDatabase);
  const room = quoteIdentifier(roomDatabase);
  const activity = quoteIdentifier(activityDatabase);
  return [
    `CREATE DATABASE IF NOT EXISTS ${wallet} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    `CREATE TABLE IF NOT EXISTS ${wallet}.wallet_outbox (
       id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
       app_code VARCHAR(32),
       event_id VARCHAR(191),
       event_type VARCHAR(64),
       user_id VARCHAR(64),
       payload JSON,
       created_at_ms BIGINT,
       UNIQUE KEY uk_wallet_outbox_event (app_code, event_id)
     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    `CREATE DATABASE IF NOT EXISTS ${room} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    `CREATE TABLE IF NOT EXISTS ${room}.room_outbox (
       id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
       app_code VARCHAR(32),
       event_id VARCHAR(191),
       event_type VARCHAR(64),
       room_id VARCHAR(64),
       payload JSON,
       status VARCHAR(16) NOT NULL DEFAULT 'pending',
       created_at_ms BIGINT,
       UNIQUE KEY uk_room_outbox_event (app_code, event_id)
     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    `CREATE DATABASE IF NOT EXISTS ${activity} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    `CREATE TABLE IF NOT EXISTS ${activity}.activity_outbox (
       id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
       app_code VARCHAR(32),
       event_id VARCHAR(191),
       event_type VARCHAR(64),
       user_id VARCHAR(64),
       payload JSON,
       created_at_ms BIGINT,
       UNIQUE KEY uk_activity_outbox_event (app_code, event_id)
     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ];
}

export async function createOwnerFixtures(pool: Pool, walletDatabase: string, roomDatabase: string, activityDatabase: string): Promise<void> {
  for (const statement of ownerFixtureStatements(walletDatabase, roomDatabase, activityDatabase)) await pool.query(statement);
}
