import type { Logger } from 'pino';
import type { Pool } from '../platform/mysql.ts';
import type { Redis } from '../platform/redis.ts';
import { describeError } from '../platform/errors.ts';
import type { Role } from '../app/role.ts';
import { withDeadline } from '../platform/deadline.ts';
import { repeatedErrors } from '../platform/repeated-errors.ts';
import type { Readiness } from './health-server.ts';

/**
 * Ready = MySQL and Redis answer within a second and every role of this process is running. The returned check is
 * called on every /readyz and every scrape, so a backend that stays down is logged once per 10 s per check, with a
 * count, not once per call.
 */
export function readinessCheck(pool: Pool, redis: Redis | null, roles: readonly Role[], logger?: Logger): () => Promise<Readiness> {
  const report = new Map<string, (err: Error) => void>();
  const failed = (name: string, err: unknown) => {
    if (!logger) return;
    if (!report.has(name)) report.set(name, repeatedErrors(logger.child({ check: name }), 'readiness check failed'));
    report.get(name)!(new Error(describeError(err)));
  };
  // The answer is unauthenticated: a driver's message (user, host) goes to the log, not into it.
  const probe = async (name: string, what: () => Promise<unknown>) => {
    try {
      await withDeadline(what(), 1000, 'probe');
      return 'ok';
    } catch (err) {
      failed(name, err);
      return 'down (the process log says why)';
    }
  };
  return async () => {
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
  };
}
