import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { formatKey, type LedgerKey } from '../../ledger/types.ts';

/**
 * The pushes Tencent accepted in the last `windowMs`, per app, in Redis. A push whose ledger row was lost — a MySQL
 * failover to a replica that lacked it — is recorded again and would go out again, and TIMPush drops a repeated
 * MsgRandom only within the same second: the phone would show it twice. A row found here is recorded as delivered
 * without a call. Only accepted pushes are noted, so a resend after an ambiguous answer (retry_ambiguous) still goes.
 */
export class RecentPushes {
  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Of these rows, the keys (formatKey) pushed within the window. */
  async sent(rows: readonly LedgerKey[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set();
    const pipeline = this.redis.pipeline();
    for (const row of rows) pipeline.zscore(this.key, member(row));
    const answers = (await pipeline.exec()) ?? [];
    const since = this.now() - this.windowMs;
    return new Set(
      rows
        .filter((_, i) => {
          const [err, score] = answers[i] ?? [null, null];
          if (err) throw err;
          return score !== null && Number(score) >= since;
        })
        .map(formatKey),
    );
  }

  /** Notes rows Tencent accepted, and forgets what is older than the window (one round trip). */
  async note(rows: readonly LedgerKey[]): Promise<void> {
    if (rows.length === 0) return;
    const at = this.now();
    await this.redis
      .multi()
      .zadd(this.key, ...rows.flatMap((row) => [at, member(row)]))
      .zremrangebyscore(this.key, '-inf', at - this.windowMs)
      .pexpire(this.key, this.windowMs)
      .exec();
  }
}

/** A row's fixed-length member: its ledger key's digest. */
function member(row: LedgerKey): string {
  return createHash('sha256').update(formatKey(row)).digest('base64url').slice(0, 22);
}
