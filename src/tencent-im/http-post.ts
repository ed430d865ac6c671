import http from 'node:http';
import https from 'node:https';

/** What came back from one POST: its status and body, read whole. */
export interface PostAnswer {
  statusCode: number;
  body: string;
}

/** A POST that got no answer. `uploaded`: the whole request had been written, so the server may have acted on it. */
export class PostError extends Error {
  constructor(
    readonly code: string,
    readonly uploaded: boolean,
  ) {
    super(`transport error ${code}`);
  }
}

/**
 * One keep-alive POST client over node:http(s), for Tencent's REST calls: a deadline for the whole exchange, the body
 * written with the headers in one go, and whether the request was fully written when it failed (the ambiguity the
 * channels decide on). Replaces got here: its per-request option merging and hooks cost more CPU than the send.
 */
export class HttpPoster {
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;

  constructor(
    private readonly base: URL,
    options: { maxSockets: number; idleSocketTimeoutMs: number; timeoutMs: number },
  ) {
    const secure = base.protocol === 'https:';
    // The agent's timeout closes only free sockets (Node's Agent destroys a timed-out socket only from its free
    // list); a request in flight is bounded by timeoutMs instead.
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets, timeout: options.idleSocketTimeoutMs };
    this.agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    this.request = secure ? https.request : http.request;
    this.timeoutMs = options.timeoutMs;
  }

  private readonly timeoutMs: number;

  post(pathAndQuery: string, body: string): Promise<PostAnswer> {
    return new Promise((resolve, reject) => {
      let uploaded = false;
      let settled = false;
      const fail = (code: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        req.destroy();
        reject(new PostError(code, uploaded));
      };
      const req = this.request({
        protocol: this.base.protocol,
        hostname: this.base.hostname,
        port: this.base.port,
        path: `${this.base.pathname.replace(/\/+$/, '')}/${pathAndQuery}`,
        method: 'POST',
        agent: this.agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      // Node runs expired timers before it reads sockets, so after a pause (GC, a starved CPU, SIGSTOP) the deadline
      // fires ahead of an answer that is already waiting: look once more after the I/O phase, and give an answer
      // whose headers have arrived a moment to finish, before calling it a timeout (which would resend or give up).
      let answering = false;
      const deadline = setTimeout(
        () =>
          setImmediate(() => {
            if (settled) return;
            if (!answering) return fail('ETIMEDOUT');
            setTimeout(() => fail('ETIMEDOUT'), Math.min(1000, this.timeoutMs)).unref();
          }),
        this.timeoutMs,
      );
      req.on('finish', () => {
        uploaded = true;
      });
      req.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? 'NETWORK'));
      req.on('response', (res) => {
        answering = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? 'NETWORK'));
        res.on('aborted', () => fail('ECONNRESET'));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          resolve({ statusCode: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
