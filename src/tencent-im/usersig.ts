import TLSSigAPIv2 from 'tls-sig-api-v2';
import { redactProviderText } from './redact.ts';

/**
 * The admin UserSig, minted once and reused until it nears expiry (or the API says it is bad). Minting is cheap,
 * but one cached sig keeps every request identical apart from `random`, and the secret key stays in one place.
 */
export class UserSigCache {
  private readonly api: InstanceType<typeof TLSSigAPIv2.Api>;
  private cached: { sig: string; renewAtMs: number } | null = null;
  /** Sigs handed out recently (a request may still carry the one before a renewal), for redaction. */
  private readonly recent: string[] = [];

  constructor(
    sdkAppId: number,
    private readonly secretKey: string,
    private readonly identifier: string,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.api = new TLSSigAPIv2.Api(sdkAppId, secretKey);
  }

  get(): string {
    const now = this.now();
    if (!this.cached || now >= this.cached.renewAtMs) {
      const ttlSeconds = Math.max(60, Math.floor(this.ttlMs / 1000));
      // Renew when 80 % of the lifetime is used, so a sig in flight never expires at Tencent's end.
      this.cached = { sig: this.api.genUserSig(this.identifier, ttlSeconds), renewAtMs: now + ttlSeconds * 800 };
      this.recent.unshift(this.cached.sig);
      this.recent.length = Math.min(this.recent.length, 3);
    }
    return this.cached.sig;
  }

  /** Provider text with this app's secrets taken out (see redactProviderText). */
  redact(text: string): string {
    return redactProviderText(text, [...this.recent, this.secretKey]);
  }

  invalidate(): void {
    this.cached = null;
  }
}
