/** A server a command needs is not answering, or answers that it cannot serve us: one line naming it (exit code 3). */
export class UnreachableError extends Error {}

/** `mysql 127.0.0.1:3306` from a DSN, without its user or password. */
export function serverOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || (u.protocol.startsWith('redis') ? 6379 : 3306)}`;
  } catch {
    return 'the configured server';
  }
}

const NETWORK: Record<string, string> = {
  ECONNREFUSED: 'connection refused: is it running?',
  ETIMEDOUT: 'no answer in time',
  ENOTFOUND: 'host name not found',
  EHOSTUNREACH: 'host unreachable',
  ECONNRESET: 'connection reset',
  PROTOCOL_CONNECTION_LOST: 'connection lost',
};

/**
 * What a person should read when MySQL or Redis fails a command: the server, the cause in words and what to do,
 * in one line; never a driver's stack or a truncated driver message, never the DSN's credentials.
 */
export function serverProblem(server: 'MySQL' | 'Redis', url: string, err: unknown): string {
  const at = `${server} at ${serverOf(url)}`;
  const e = (err ?? {}) as { code?: string; message?: string; errors?: Array<{ code?: string }>; sqlMessage?: string };
  const code = e.code ?? e.errors?.find((inner) => inner.code)?.code;
  if (code && NETWORK[code]) return `${at} is unreachable (${NETWORK[code]})`;
  if (code === 'ER_BAD_DB_ERROR')
    return `${at} has no database ${/'([^']+)'/.exec(e.sqlMessage ?? e.message ?? '')?.[1] ?? 'of that name'}: run \`notice-service migrate\` first`;
  if (code?.startsWith('ER_ACCESS_DENIED') || code === 'ER_DBACCESS_DENIED_ERROR')
    return `${at} refused the user in mysql.url (access denied): check the credentials`;
  const message = String(e.message ?? err ?? 'unknown error');
  if (/did not finish within|timed? ?out|max retries per request|Connection is closed/i.test(message)) return `${at} is unreachable (no answer in time)`;
  if (/NOAUTH|WRONGPASS/.test(message)) return `${at} refused the password in redis.url: check the credentials`;
  return `${at} failed: ${firstLine(message)}`;
}

/** The first line of a message, at most 200 characters: a CLI error is one line. */
export function firstLine(message: string): string {
  const line = message.split('\n')[0]!.trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
