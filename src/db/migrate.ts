import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { drizzle } from 'drizzle-orm/mysql2';
import { migrate } from 'drizzle-orm/mysql2/migrator';
import { quoteIdentifier, serverUrlOf } from '../platform/mysql.ts';
import { createOwnerFixtures } from './owner-fixtures.ts';
import type { NoticeConfig } from '../config/schema.ts';

export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle/migrations', import.meta.url));

export interface MigrateOptions {
  mysqlUrl: string;
  /** Also create the reference owner outboxes of this config's sources (development and tests only). */
  ownerFixtures?: NoticeConfig;
}

/** Creates notice-service's database if missing and applies the drizzle-kit migrations committed in drizzle/. */
export async function runMigrations(options: MigrateOptions): Promise<{ database: string }> {
  const { serverUrl, database } = serverUrlOf(options.mysqlUrl);
  const admin = await mysql.createConnection({ uri: serverUrl, multipleStatements: false });
  try {
    await admin.query(`CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(database)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await admin.end();
  }
  const pool = mysql.createPool({ uri: options.mysqlUrl, connectionLimit: 2 });
  try {
    await migrate(drizzle(pool), { migrationsFolder: MIGRATIONS_FOLDER });
    if (options.ownerFixtures) {
      await createOwnerFixtures(pool, options.ownerFixtures);
    }
  } finally {
    await pool.end();
  }
  return { database };
}
