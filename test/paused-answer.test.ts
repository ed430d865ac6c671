import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpPoster, PostError } from '../src/tencent-im/http-post.ts';

/**
 * Tencent stands in a process of its own, so it answers while this one is paused. The pause is the event loop
 * blocked outright (as by a long GC, a CPU-starved host or SIGSTOP): the answer waits in the socket while the
 * request's deadline expires, and both are handled when the process runs again.
 */
let server: ChildProcess | undefined;
const dir = mkdtempSync(join(tmpdir(), 'notice-pause-'));
/** The server notes here how many answers it has written (readable while this process's loop is blocked). */
const answeredFile = join(dir, 'answered');
afterEach(() => {
  server?.kill('SIGKILL');
  server = undefined;
  rmSync(answeredFile, { force: true });
});

async function answeringServer(status: number, body: string): Promise<URL> {
  server = spawn(
    process.execPath,
    [
      '-e',
      `let n = 0; require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(${status}, { 'content-type': 'application/json' }); res.end(${JSON.stringify(body)}, () => require('node:fs').writeFileSync(${JSON.stringify(answeredFile)}, String(++n))); }); }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [line] = (await once(server.stdout!, 'data')) as [Buffer];
  return new URL(`http://127.0.0.1:${Number(line.toString().trim())}/`);
}

const answered = (): number => {
  try {
    return Number(readFileSync(answeredFile, 'utf8'));
  } catch {
    return 0;
  }
};

/**
 * Blocks this process's event loop, like a pause: nothing of it runs, the kernel still takes the bytes. It lasts at
 * least `ms` and, with `untilAnswered`, until the server has written that many answers: on a starved machine the
 * server may take longer than the pause to answer, and the test is about an answer that arrived during one.
 */
function pause(ms: number, untilAnswered = 0): void {
  const ends = Date.now() + ms;
  while (Date.now() < ends || answered() < untilAnswered) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
}

/** A POST whose answer arrives while the process is paused past the request's deadline. */
async function postAcrossPause(base: URL): Promise<{ answer?: { statusCode: number; body: string }; error?: PostError }> {
  const poster = new HttpPoster(base, { maxSockets: 4, idleSocketTimeoutMs: 10_000, timeoutMs: 300 });
  try {
    // Warm the connection, so the paused request's bytes go out at once on a socket that is already open.
    const warmed = answered() + 1;
    await poster.post('v4/warm', '{}');
    while (answered() < warmed) await new Promise((r) => setTimeout(r, 5)); // the server's note of it, too
    const before = warmed;
    const pending = poster.post('v4/openim/sendmsg', '{"MsgRandom":1}').then(
      (answer) => ({ answer }),
      (error: PostError) => ({ error }),
    );
    // Let the request be written, then stop: the server answers within a millisecond, we look after 800 ms.
    await new Promise((r) => setImmediate(r));
    pause(800, before + 1);
    return await pending;
  } finally {
    poster.close();
  }
}

describe('an answer that arrived during a pause is read, not thrown away as a timeout', () => {
  it('an accepted sendmsg is an answer (no resend of a delivered message)', async () => {
    const base = await answeringServer(200, '{"ActionStatus":"OK","ErrorCode":0,"MsgKey":"k1"}');
    for (let run = 0; run < 5; run++) {
      const { answer, error } = await postAcrossPause(base);
      expect(error).toBeUndefined();
      expect(answer).toEqual({ statusCode: 200, body: '{"ActionStatus":"OK","ErrorCode":0,"MsgKey":"k1"}' });
    }
  });

  it('a refusal (503) is a refusal, not "may have arrived" (a push would be marked unconfirmed and never sent)', async () => {
    const base = await answeringServer(503, '{"ActionStatus":"FAIL","ErrorCode":70503}');
    for (let run = 0; run < 5; run++) {
      const { answer, error } = await postAcrossPause(base);
      expect(error).toBeUndefined();
      expect(answer?.statusCode).toBe(503);
    }
  });

  it('no answer at all is still a timeout, with the request counted as uploaded', async () => {
    server = spawn(
      process.execPath,
      ['-e', "require('node:http').createServer(() => {}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });"],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const [line] = (await once(server.stdout!, 'data')) as [Buffer];
    const poster = new HttpPoster(new URL(`http://127.0.0.1:${Number(line.toString().trim())}/`), {
      maxSockets: 4,
      idleSocketTimeoutMs: 10_000,
      timeoutMs: 200,
    });
    try {
      const error = await poster.post('v4/openim/sendmsg', '{}').then(
        () => null,
        (err: PostError) => err,
      );
      expect(error).toBeInstanceOf(PostError);
      expect(error).toMatchObject({ code: 'ETIMEDOUT', uploaded: true });
    } finally {
      poster.close();
    }
  });
});
