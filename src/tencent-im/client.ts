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
  close(): void;
}

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

  close(): void {
    this.rest.close();
  }
}
