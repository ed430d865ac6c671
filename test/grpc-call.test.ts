import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { freePort } from './helpers/ports.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { TestPki } from './helpers/certs.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { InboxStore } from '../src/channels/inbox/store.ts';

/** `npm run grpc` (scripts/grpc-call.ts): the README's inbox examples, with a real server, plaintext and mutual TLS. */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let pki: TestPki | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  pki?.remove();
  proc = env = pki = undefined;
});

function grpcCall(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/grpc-call.ts', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out, err })));
}

async function addItem(user: string): Promise<void> {
  await new InboxStore(env!.notice).insert([
    {
      appCode: 'lalu',
      userId: user,
      fact: { sourceName: 'activity_outbox', appCode: 'lalu', sourceEventId: `grpc_${user}` },
      noticeKind: 'activity_notice',
      eventType: 'SystemNotice',
      payload: '{"title":"hi"}',
      createdAtMs: Date.now(),
      expireAtMs: null,
    },
  ]);
}

const caller = JSON.stringify({ caller: { app_code: 'lalu', user_id: '77001' } });

describe('npm run grpc', () => {
  it('calls, streams and lists over plaintext on loopback; errors are one line (exit 1), usage errors exit 2', async () => {
    const port = await freePort();
    env = await createTestEnv({ inbox: { enabled: true, api_port: port } });
    proc = await startPipeline(env.config, ['inbox-api']);
    await addItem('77001');
    const addr = ['--addr', `127.0.0.1:${port}`];

    const count = await grpcCall([...addr, 'GetUnreadCount', caller]);
    expect(count.code, count.err).toBe(0);
    expect(JSON.parse(count.out).unread.count).toBe(1);

    const listed = await grpcCall([...addr, 'notice.inbox.v1.InboxService/ListNotifications', caller]);
    expect(listed.code, listed.err).toBe(0);
    expect(JSON.parse(listed.out).notifications).toHaveLength(1);

    const watched = await grpcCall([...addr, 'WatchInbox', caller, '--max', '1']);
    expect(watched.code, watched.err).toBe(0);
    expect(JSON.parse(watched.out.trim()).snapshot.unread.count).toBe(1);

    const refused = await grpcCall([...addr, 'GetUnreadCount', '{"caller":{"app_code":"lalu"}}']);
    expect(refused.code).toBe(1);
    expect(refused.err.trim()).toMatch(/^grpc: INVALID_ARGUMENT: .*user_id/);
    expect(refused.err.trim().split('\n')).toHaveLength(1);

    for (const [args, message] of [
      [['Frobnicate'], /no method 'Frobnicate'; one of: ListNotifications/],
      [['GetUnreadCount', '{oops'], /the request is not JSON/],
      [['--ca', 'x', 'GetUnreadCount'], /--ca, --cert and --key go together/],
      [['--bogus'], /unknown option '--bogus'/],
    ] as const) {
      const r = await grpcCall([...args]);
      expect(r.code, r.err).toBe(2);
      expect(r.err).toMatch(message);
    }
  }, 120_000);

  it('speaks mutual TLS with a gateway certificate', async () => {
    pki = new TestPki();
    pki.ca('server-ca');
    pki.ca('gateway-ca');
    const server = pki.issue('server-ca', 'notice-api', 'server');
    const gateway = pki.issue('gateway-ca', 'gateway', 'client');
    const port = await freePort();
    env = await createTestEnv({
      inbox: {
        enabled: true,
        page_token_secret: 'grpc-call-secret',
        api_host: '127.0.0.1',
        api_port: port,
        api_tls: { cert_file: server.certFile, key_file: server.keyFile, client_ca_file: `${pki.dir}/gateway-ca.crt` },
      },
    });
    proc = await startPipeline(env.config, ['inbox-api']);
    await addItem('77001');
    const tls = ['--ca', `${pki.dir}/server-ca.crt`, '--cert', gateway.certFile, '--key', gateway.keyFile];
    const ok = await grpcCall(['--addr', `127.0.0.1:${port}`, ...tls, 'GetUnreadCount', caller]);
    expect(ok.code, ok.err).toBe(0);
    expect(JSON.parse(ok.out).unread.count).toBe(1);
    // Without a certificate the server refuses the handshake.
    const plain = await grpcCall(['--addr', `127.0.0.1:${port}`, 'GetUnreadCount', caller]);
    expect(plain.code).toBe(1);
    expect(plain.err).toMatch(/^grpc: UNAVAILABLE/);
  }, 120_000);
});
