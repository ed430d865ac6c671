import http from 'node:http';
import https from 'node:https';
import { randomInt } from 'node:crypto';
import got, { type Got } from 'got';
import { classifyErrorCode } from './error-codes.ts';
import { buildSendMsgBody, type C2CNotice } from './message.ts';
import type { UserSigCache } from './usersig.ts';
import type { Logger } from 'pino';

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
}

interface SendMsgResponse {
  ActionStatus?: string;
  ErrorCode?: number;
  ErrorInfo?: string;
  MsgKey?: string;
}

export class TencentImClient implements TencentImSender {
  private readonly http: Got;
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(
    private readonly options: TencentImClientOptions,
    private readonly userSig: UserSigCache,
    private readonly logger?: Logger,
  ) {
    this.agents = {
      http: new http.Agent({ keepAlive: true, maxSockets: options.maxSockets }),
      https: new https.Agent({ keepAlive: true, maxSockets: options.maxSockets }),
    };
    this.http = got.extend({
      prefixUrl: options.baseUrl.replace(/\/+$/, ''),
      agent: this.agents,
      timeout: { request: options.requestTimeoutMs },
      retry: { limit: 0 }, // retries belong to the ledger and BullMQ, not to the HTTP call
      throwHttpErrors: false,
      responseType: 'text',
      headers: { 'content-type': 'application/json' },
    });
  }

  async sendC2C(notice: C2CNotice): Promise<SendOutcome> {
    const body = JSON.stringify(buildSendMsgBody(notice, Math.min(604800, Math.floor(this.options.msgLifeTimeMs / 1000))));
    const first = await this.post(body);
    if (first.resign) {
      // The cached sig was rejected: mint a fresh one and try once more within the same attempt.
      const rejected = first.outcome as { code?: string; message?: string };
      this.logger?.warn({ code: rejected.code, error: rejected.message }, 'Tencent IM rejected the admin UserSig; minted a new one');
      this.userSig.invalidate();
      // A fresh sig rejected too means a config problem (wrong key or clock); it stays a retryable error so a fixed
      // config heals the backlog within the retry budget.
      return (await this.post(body)).outcome;
    }
    return first.outcome;
  }

  private async post(body: string): Promise<{ outcome: SendOutcome; resign: boolean }> {
    const started = performance.now();
    const searchParams = new URLSearchParams({
      sdkappid: String(this.options.sdkAppId),
      identifier: this.options.adminIdentifier,
      usersig: this.userSig.get(),
      random: String(randomInt(0, 2 ** 32 - 1)),
      contenttype: 'json',
    });
    const latency = () => Math.round(performance.now() - started);
    let response;
    try {
      response = await this.http.post('v4/openim/sendmsg', { body, searchParams });
    } catch (err) {
      // got's errors carry the request URL (with the UserSig); keep only the code and a generic message.
      const code = (err as { code?: string }).code ?? 'NETWORK';
      return { outcome: { kind: 'retry', code, message: `transport error ${code}`, latencyMs: latency() }, resign: false };
    }
    if (response.statusCode !== 200) {
      const outcome: SendOutcome = { kind: 'retry', code: `HTTP_${response.statusCode}`, message: `HTTP ${response.statusCode}`, latencyMs: latency() };
      return { outcome, resign: false };
    }
    let parsed: SendMsgResponse;
    try {
      parsed = JSON.parse(response.body) as SendMsgResponse;
    } catch {
      return { outcome: { kind: 'retry', code: 'BAD_RESPONSE', message: 'response body is not JSON', latencyMs: latency() }, resign: false };
    }
    const errorCode = typeof parsed.ErrorCode === 'number' ? parsed.ErrorCode : -1;
    if (errorCode === 0 && parsed.ActionStatus === 'OK') {
      return { outcome: { kind: 'delivered', msgKey: parsed.MsgKey ?? '', latencyMs: latency() }, resign: false };
    }
    const message = (parsed.ErrorInfo ?? 'no ErrorInfo').slice(0, 512);
    const errorClass = classifyErrorCode(errorCode);
    const kind = errorClass === 'resign' ? 'retry' : errorClass;
    return { outcome: { kind, code: String(errorCode), message, latencyMs: latency() }, resign: errorClass === 'resign' };
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
