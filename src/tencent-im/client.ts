import type { Logger } from 'pino';
import { buildSendMsgBody, type C2CNotice } from './message.ts';
import { TencentRest } from './rest.ts';
import type { UserSigCache } from './usersig.ts';

/** What one send came to. Expected outcomes are values; only programming errors throw. */
export type SendOutcome =
  | { kind: 'delivered'; msgKey: string; latencyMs: number }
  | { kind: 'retry'; code: string; message: string; latencyMs: number }
  | { kind: 'rate_limited'; code: string; message: string; latencyMs: number }
  | { kind: 'permanent'; code: string; message: string; latencyMs: number };

export interface TencentImSender {
  sendC2C(notice: C2CNotice): Promise<SendOutcome>;
  /** `v4/openim/admin_msgwithdraw`: takes back a C2C message the admin sent, by its MsgKey. */
  withdraw?(toAccount: string, msgKey: string): Promise<WithdrawOutcome>;
  close(): void;
}

export type WithdrawOutcome = { kind: 'withdrawn' } | { kind: 'retry' | 'permanent'; code: string; message: string };

export interface TencentImClientOptions {
  baseUrl: string;
  sdkAppId: number;
  adminIdentifier: string;
  requestTimeoutMs: number;
  msgLifeTimeMs: number;
  maxSockets: number;
  idleSocketTimeoutMs?: number;
}

/** `v4/openim/sendmsg`: one C2C message. A resend after an unclear answer is safe: Tencent's 120 s filter drops it. */
export class TencentImClient implements TencentImSender {
  private readonly rest: TencentRest;

  constructor(
    private readonly options: TencentImClientOptions,
    userSig: UserSigCache,
    logger?: Logger,
  ) {
    this.rest = new TencentRest(options, userSig, logger);
  }

  async sendC2C(notice: C2CNotice): Promise<SendOutcome> {
    const lifeTimeMs = Math.min(this.options.msgLifeTimeMs, notice.lifeTimeMs ?? Infinity);
    const body = JSON.stringify(buildSendMsgBody(notice, Math.min(604800, Math.max(1, Math.floor(lifeTimeMs / 1000)))));
    const answer = await this.rest.call('v4/openim/sendmsg', body);
    if (answer.kind === 'ok') return { kind: 'delivered', msgKey: String(answer.body.MsgKey ?? ''), latencyMs: answer.latencyMs };
    return { kind: answer.kind, code: answer.code, message: answer.message, latencyMs: answer.latencyMs };
  }

  async withdraw(toAccount: string, msgKey: string): Promise<WithdrawOutcome> {
    const body = JSON.stringify({ From_Account: this.options.adminIdentifier, To_Account: toAccount, MsgKey: msgKey });
    const answer = await this.rest.call('v4/openim/admin_msgwithdraw', body);
    if (answer.kind === 'ok') return { kind: 'withdrawn' };
    return { kind: answer.kind === 'permanent' ? 'permanent' : 'retry', code: answer.code, message: answer.message };
  }

  close(): void {
    this.rest.close();
  }
}
