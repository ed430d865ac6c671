import { randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import { HttpPoster, PostError } from './http-post.ts';
import { classifyErrorCode, type ErrorClass } from './error-codes.ts';
import type { UserSigCache } from './usersig.ts';

export interface TencentRestOptions {
  baseUrl: string;
  sdkAppId: number;
  adminIdentifier: string;
  requestTimeoutMs: number;
  maxSockets: number;
  /** Free (kept-alive) sockets idle this long are closed (tencent_im.idle_socket_timeout). */
  idleSocketTimeoutMs?: number;
}

/** A Tencent answer with ErrorCode 0 and ActionStatus OK: the parsed body. */
export interface RestOk {
  kind: 'ok';
  body: Record<string, unknown>;
  latencyMs: number;
}

/** Anything else. `mayHaveArrived`: the whole request was written and no answer came, so Tencent may have acted on it. */
export interface RestFailure {
  kind: 'retry' | 'rate_limited' | 'permanent';
  code: string;
  message: string;
  latencyMs: number;
  mayHaveArrived: boolean;
}

/**
 * Tencent IM's REST scheme (`v4/<service>/<command>?sdkappid&identifier&usersig&random&contenttype=json`) over one
 * keep-alive agent, with the admin UserSig re-minted once when Tencent rejects it. Shared by sendmsg and
 * timpush/batch, which differ only in path, body and answer.
 */
export class TencentRest {
  private readonly http: HttpPoster;

  constructor(
    private readonly options: TencentRestOptions,
    private readonly userSig: UserSigCache,
    private readonly logger?: Logger,
  ) {
    // No retries here: they belong to the ledger and BullMQ, not to the HTTP call.
    this.http = new HttpPoster(new URL(options.baseUrl), {
      maxSockets: options.maxSockets,
      idleSocketTimeoutMs: options.idleSocketTimeoutMs ?? 4000,
      timeoutMs: options.requestTimeoutMs,
    });
  }

  async call(path: string, body: string): Promise<RestOk | RestFailure> {
    const first = await this.post(path, body);
    if (first.kind === 'resign') {
      // The cached sig was rejected: mint a fresh one and try once more within the same attempt.
      this.logger?.warn({ code: first.code, error: first.message }, 'Tencent IM rejected the admin UserSig; minted a new one');
      this.userSig.invalidate();
      // A fresh sig rejected too means a config problem (wrong key or clock); it stays a retryable error so a fixed
      // config heals the backlog within the retry budget.
      const second = await this.post(path, body);
      return second.kind === 'resign' ? { ...second, kind: 'retry' } : (second as RestOk | RestFailure);
    }
    return first as RestOk | RestFailure;
  }

  private async post(path: string, body: string): Promise<RestOk | (Omit<RestFailure, 'kind'> & { kind: ErrorClass })> {
    const started = performance.now();
    const searchParams = new URLSearchParams({
      sdkappid: String(this.options.sdkAppId),
      identifier: this.options.adminIdentifier,
      usersig: this.userSig.get(),
      random: String(randomInt(0, 2 ** 32 - 1)),
      contenttype: 'json',
    });
    const latency = () => Math.round(performance.now() - started);
    let response: { statusCode: number; body: string };
    try {
      response = await this.http.post(`${path}?${searchParams}`, body);
    } catch (err) {
      // Only the code and a generic message: the request's URL carries the UserSig.
      const code = err instanceof PostError ? err.code : 'NETWORK';
      const uploaded = err instanceof PostError && err.uploaded;
      return {
        kind: 'retry',
        code,
        message: `transport error ${code}${uploaded ? ' after the request was sent' : ''}`,
        latencyMs: latency(),
        mayHaveArrived: uploaded,
      };
    }
    if (response.statusCode !== 200) {
      // Tencent answers every business outcome with 200; another status is its gateway's, before processing.
      return { kind: 'retry', code: `HTTP_${response.statusCode}`, message: `HTTP ${response.statusCode}`, latencyMs: latency(), mayHaveArrived: false };
    }
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(response.body) as Record<string, unknown>;
    } catch {
      return { kind: 'retry', code: 'BAD_RESPONSE', message: 'response body is not JSON', latencyMs: latency(), mayHaveArrived: true };
    }
    const errorCode = typeof parsed.ErrorCode === 'number' ? parsed.ErrorCode : -1;
    if (errorCode === 0 && parsed.ActionStatus === 'OK') return { kind: 'ok', body: parsed, latencyMs: latency() };
    const message = this.providerText(parsed.ErrorInfo ?? 'no ErrorInfo');
    return {
      kind: classifyErrorCode(errorCode, path.startsWith('v4/timpush/') ? 'push' : 'im'),
      code: String(errorCode),
      message,
      latencyMs: latency(),
      mayHaveArrived: false,
    };
  }

  /** Tencent's own words (ErrorInfo), safe to log and store: no UserSig, no key, no control characters. */
  providerText(raw: unknown): string {
    return this.userSig.redact(String(raw));
  }

  close(): void {
    this.http.close();
  }
}
