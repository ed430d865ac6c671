import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';

/** The cookie that marks a browser which has logged in before (OWASP "device cookies"): the throttle spares it. */
export const DEVICE_COOKIE = 'ns_device';
const DEVICE_COOKIE_MAX_AGE_S = 30 * 24 * 3600;

/**
 * Device cookies: `<nonce>.<HMAC(nonce)>`, keyed by the credentials, so changing the password revokes every one and
 * every dashboard process recognises the others' (no shared state).
 */
export class DeviceCookies {
  private readonly key: Buffer;

  constructor(username: string, password: string) {
    this.key = createHash('sha256').update(`notice-service device cookie\u0000${username}:${password}`).digest();
  }

  issue(): string {
    const nonce = randomBytes(16).toString('base64url');
    return `${nonce}.${this.mac(nonce)}`;
  }

  /** True when the request carries a cookie this dashboard issued. */
  recognises(req: Request): boolean {
    const value = cookieOf(req.headers.cookie ?? '', DEVICE_COOKIE);
    const [nonce, mac] = value?.split('.') ?? [];
    if (!nonce || !mac) return false;
    const expected = Buffer.from(this.mac(nonce));
    const given = Buffer.from(mac);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private mac(nonce: string): string {
    return createHmac('sha256', this.key).update(nonce).digest('base64url');
  }
}

function cookieOf(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * HTTP Basic authentication for every dashboard route (pages, bull-board API, ledger API). Credentials are
 * compared as SHA-256 digests with timingSafeEqual, so neither length nor content leaks through timing.
 * Missing or wrong credentials get 401 and no content; wrong ones are logged with the address and whether the user
 * name was the configured one — never what was typed (a password typed in the user box would land in the log).
 * A browser that logs in gets a device cookie (see loginThrottle). The scheme name is case-insensitive (RFC 7617).
 */
export function basicAuth(username: string, password: string, devices: DeviceCookies, basePath: string, logger?: Logger, realm = 'notice-service') {
  const expected = digest(`${username}:${password}`);
  const expectedUser = digest(username);
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization ?? '';
    const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
    const given = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
    if (password !== '' && timingSafeEqual(digest(given), expected)) {
      // Who did what is recorded for operator actions (the audit log); the password never leaves this function.
      res.locals.operator = username;
      if (!devices.recognises(req)) {
        res.cookie(DEVICE_COOKIE, devices.issue(), {
          httpOnly: true,
          sameSite: 'strict',
          secure: req.secure,
          path: basePath,
          maxAge: DEVICE_COOKIE_MAX_AGE_S * 1000,
        });
      }
      return next();
    }
    if (header !== '') {
      const colon = given.indexOf(':');
      const knownUser = colon >= 0 && timingSafeEqual(digest(given.slice(0, colon)), expectedUser);
      logger?.warn({ ip: req.ip, known_user: knownUser, path: req.path }, 'dashboard login failed');
    }
    res.set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`).status(401).type('text/plain').send('authentication required');
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
