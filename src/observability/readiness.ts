import type { Logger } from 'pino';
import type { Pool } from '../platform/mysql.ts';
import type { Redis } from '../platform/redis.ts';
import { describeError } from '../platform/errors.ts';
import { withDeadline, type Role } from '../app/role.ts';
import type { Readiness } from './health-server.ts';

/** Ready = MySQL and Redis answer within a second and every role of this process is running. */
export async function checkReadiness(pool: Pool, redis: Redis | null, roles: readonly Role[], logger?: Logger): Promise<Readiness> {
  // The answer is unauthenticated: a driver's message (user, host) goes to the log, not into it.
  const probe = async (name: string, what: () => Promise<unknown>) => {
    try {
      await withDeadline(what(), 1000, 'probe');
      return 'ok';
    } catch (err) {
      logger?.warn({ check: name, err: describeError(err) }, 'readiness check failed');
      return 'down (the process log says why)';
    }
  };
  const checks: Record<string, string> = {
    mysql: await probe('mysql', () => pool.query('SELECT 1')),
    // A process without Redis (inbox-api alone) does not depend on it.
    ...(redis ? { redis: await probe('redis', () => redis.ping()) } : {}),
  };
  for (const role of roles) {
    checks[`role:${role.name}`] = role.isRunning() ? 'ok' : 'not running';
    Object.assign(checks, role.health?.() ?? {});
  }
  return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
}
