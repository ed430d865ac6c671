import type { Logger } from 'pino';
import type { OfflinePushInfo } from './offline-push.ts';
import { classifyErrorCode } from './error-codes.ts';
import { TencentRest, type TencentRestOptions } from './rest.ts';
import type { UserSigCache } from './usersig.ts';

export interface PushBatch {
  fromAccount: string;
  accounts: readonly string[];
  info: OfflinePushInfo;
  msgRandom: number;
  /** ≤ 64 bytes; echoed to Push callbacks and traces. */
  dataId: string;
  /** OfflineStorageTime: how long (s) Tencent may hold the push for a user who is not reachable yet; absent = its default. */
  offlineStorageSeconds?: number;
}

/** What one account of an accepted call came to (absent from ErrorList = pushed). */
export type AccountResult = { kind: 'pushed' } | { kind: 'retry' | 'permanent'; code: string; message: string };

export type PushBatchOutcome =
  | { kind: 'accepted'; taskId: string; results: Map<string, AccountResult>; latencyMs: number }
  | { kind: 'retry' | 'rate_limited' | 'permanent'; code: string; message: string; latencyMs: number }
  /** The request may have reached Tencent (written in full, no answer): a resend may push twice. */
  | { kind: 'ambiguous'; code: string; message: string; latencyMs: number };

export interface TencentPushSender {
  batch(call: PushBatch): Promise<PushBatchOutcome>;
  close(): void;
}

/** TIMPush `v4/timpush/batch`: one notification to 1-500 accounts, answered with a TaskId and per-account errors. */
export class TencentPushClient implements TencentPushSender {
  private readonly rest: TencentRest;

  constructor(options: TencentRestOptions, userSig: UserSigCache, logger?: Logger) {
    this.rest = new TencentRest(options, userSig, logger);
  }

  async batch(call: PushBatch): Promise<PushBatchOutcome> {
    const body = JSON.stringify({
      From_Account: call.fromAccount,
      To_Account: call.accounts,
      MsgRandom: call.msgRandom,
      OfflinePushInfo: call.info,
      DataId: call.dataId,
      ...(call.offlineStorageSeconds !== undefined ? { OfflineStorageTime: call.offlineStorageSeconds } : {}),
    });
    const answer = await this.rest.call('v4/timpush/batch', body);
    if (answer.kind !== 'ok') {
      if (answer.mayHaveArrived) return { kind: 'ambiguous', code: answer.code, message: answer.message, latencyMs: answer.latencyMs };
      return { kind: answer.kind, code: answer.code, message: answer.message, latencyMs: answer.latencyMs };
    }
    const results = new Map<string, AccountResult>(call.accounts.map((a) => [a, { kind: 'pushed' }]));
    const errors = Array.isArray(answer.body.ErrorList) ? (answer.body.ErrorList as Array<Record<string, unknown>>) : [];
    for (const e of errors) {
      const account = String(e.To_Account ?? '');
      if (!results.has(account)) continue;
      const code = Number(e.ErrorCode);
      // A per-account answer is about that account: only a code Tencent marks as transient is worth a retry.
      results.set(account, {
        kind: classifyErrorCode(code, 'push') === 'retry' ? 'retry' : 'permanent',
        code: String(code),
        message: this.rest.providerText(e.ErrorInfo ?? ''),
      });
    }
    return { kind: 'accepted', taskId: String(answer.body.TaskId ?? ''), results, latencyMs: answer.latencyMs };
  }

  close(): void {
    this.rest.close();
  }
}
