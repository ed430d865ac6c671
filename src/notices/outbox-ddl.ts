/**
 * Reference DDL of the common outbox shape — one row per fact for one user — for `migrate --owner-fixtures`
 * (development and tests only; the owner service owns the real table).
 */
export function userOutboxDdl(quotedDatabase: string, table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quotedDatabase}.${table} (
       id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
       app_code VARCHAR(32),
       event_id VARCHAR(191),
       event_type VARCHAR(64),
       user_id VARCHAR(64),
       payload JSON,
       created_at_ms BIGINT,
       UNIQUE KEY uk_${table}_event (app_code, event_id)
     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`;
}
