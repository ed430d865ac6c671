import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';

/** Unique per process start: the owner name in ledger locks and ingest leases. */
export function newWorkerId(role: string): string {
  return `${hostname()}:${process.pid}:${role}:${randomBytes(3).toString('hex')}`;
}
