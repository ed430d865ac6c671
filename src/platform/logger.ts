import { pino, type Logger } from 'pino';

/**
 * Every key that can hold a credential is censored by pino itself, wherever it appears in a log object, so a
 * secret cannot reach the logs by being attached to some context object later.
 */
export const SECRET_KEYS = ['secret_key', 'secretKey', 'page_token_secret', 'usersig', 'userSig', 'access_key', 'accessKey', 'password', 'authorization'];

const redactPaths = SECRET_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`, `*.*.*.${key}`]);

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'notice-service', pid: process.pid, ...bindings },
    redact: { paths: redactPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}

/** `mysql://user:pass@host/db` → `mysql://user:***@host/db`, for start-up lines that name a target. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '[unparseable url]';
  }
}

export type { Logger };
