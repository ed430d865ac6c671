import { createHmac, timingSafeEqual } from 'node:crypto';
import { inflateSync } from 'node:zlib';

export type SigCheck = { ok: true; expiresAtMs: number } | { ok: false; code: number; info: string };

/** Verifies a TLS v2 UserSig the way Tencent does: decode, inflate, recompute the HMAC, check ids and expiry. */
export function verifyUserSig(sig: string, expect: { sdkAppId: number; identifier: string; secretKey: string; nowMs: number }): SigCheck {
  let doc: Record<string, unknown>;
  try {
    const base64 = sig.replace(/\*/g, '+').replace(/-/g, '/').replace(/_/g, '=');
    doc = JSON.parse(inflateSync(Buffer.from(base64, 'base64')).toString('utf8')) as Record<string, unknown>;
  } catch {
    return { ok: false, code: 70003, info: 'UserSig is invalid (cannot be decoded)' };
  }
  const identifier = String(doc['TLS.identifier']);
  const sdkAppId = Number(doc['TLS.sdkappid']);
  const time = Number(doc['TLS.time']);
  const expire = Number(doc['TLS.expire']);
  const content = `TLS.identifier:${identifier}\nTLS.sdkappid:${sdkAppId}\nTLS.time:${time}\nTLS.expire:${expire}\n`;
  const expected = createHmac('sha256', expect.secretKey).update(content).digest();
  const given = Buffer.from(String(doc['TLS.sig'] ?? ''), 'base64');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, code: 70009, info: 'UserSig verification failed' };
  }
  if (sdkAppId !== expect.sdkAppId) return { ok: false, code: 70014, info: 'sdkappid in request does not match UserSig' };
  if (identifier !== expect.identifier) return { ok: false, code: 70013, info: 'identifier in request does not match UserSig' };
  if (!Number.isFinite(expire) || (time + expire) * 1000 < expect.nowMs) return { ok: false, code: 70001, info: 'UserSig expired' };
  return { ok: true, expiresAtMs: (time + expire) * 1000 };
}
