import { isIP } from 'node:net';

/** True for an address only this host can reach: `localhost`, 127.0.0.0/8 and ::1. `0.0.0.0` and `::` are not. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1';
  return false;
}
