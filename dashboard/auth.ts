import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';

/**
 * HTTP Basic authentication for every dashboard route (pages, bull-board API, ledger API). Credentials are
 * compared as SHA-256 digests with timingSafeEqual, so neither length nor content leaks through timing.
 * Missing or wrong credentials get 401 and no content; wrong ones are logged with the address and the user name
 * tried (never the password). The scheme name is case-insensitive (RFC 7617).
 */
export function basicAuth(username: string, password: string, logger?: Logger, realm = 'notice-service') {
  const expected = digest(`${username}:${password}`);
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization ?? '';
    const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
    const given = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
    if (password !== '' && timingSafeEqual(digest(given), expected)) {
      // Who did what is recorded for operator actions (the audit log); the password never leaves this function.
      res.locals.operator = username;
      return next();
    }
    if (header !== '') logger?.warn({ ip: req.ip, user: given.split(':')[0]?.slice(0, 64), path: req.path }, 'dashboard login failed');
    res.set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`).status(401).type('text/plain').send('authentication required');
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
