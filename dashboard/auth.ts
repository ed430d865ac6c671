import { createHash, timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

/**
 * HTTP Basic authentication for every dashboard route (pages, bull-board API, ledger API). Credentials are
 * compared as SHA-256 digests with timingSafeEqual, so neither length nor content leaks through timing.
 * Missing or wrong credentials get 401 and no content.
 */
export function basicAuth(username: string, password: string, realm = 'notice-service') {
  const expected = digest(`${username}:${password}`);
  return (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization ?? '';
    const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(header);
    const given = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
    if (password !== '' && timingSafeEqual(digest(given), expected)) return next();
    res.set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`).status(401).type('text/plain').send('authentication required');
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
