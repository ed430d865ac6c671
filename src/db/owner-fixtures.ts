import type { Pool } from 'mysql2/promise';
import type { NoticeConfig } from '../config/schema.ts';
import { quoteIdentifier } from '../platform/mysql.ts';
import { sourceModules, sourceSettings } from '../notices/sources.ts';

/**
 * Reference DDL of the owner outboxes, each from its source module, for development and tests only. In production
 * these tables belong to the owner services; notice-service only reads them. `databases` overrides where (a shard).
 */
export function ownerFixtureStatements(config: NoticeConfig, databases: Record<string, string> = {}): string[] {
  return sourceModules(config).flatMap((module) => {
    const database = quoteIdentifier(databases[module.key] ?? sourceSettings(config, module).database);
    return [`CREATE DATABASE IF NOT EXISTS ${database} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`, ...module.ownerDdl(database)];
  });
}

export async function createOwnerFixtures(pool: Pool, config: NoticeConfig, databases: Record<string, string> = {}): Promise<void> {
  for (const statement of ownerFixtureStatements(config, databases)) await pool.query(statement);
}
