import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from '../helpers/env.ts';
import { freePort } from '../helpers/ports.ts';
import { startPipeline } from '../helpers/pipeline.ts';
import { TestPki, type IssuedCert } from '../helpers/certs.ts';
import type { NoticeProcess } from '../../cli/run-roles.ts';
import { INBOX_PROTO } from '../../src/channels/inbox/api/inbox-service.ts';
import { InboxStore } from '../../src/channels/inbox/store.ts';
import { parseConfigText } from '../../src/composition/load.ts';

/**
 * The inbox API's edge, as an attacker on the same network would try it: its own listener (never the health port),
 * mutual TLS beyond loopback, and a bulkhead against oversized requests.
 */
let env: TestEnv;
let proc: NoticeProcess;
let pki: TestPki;
let serverCa: IssuedCert;
let gateway: IssuedCert;
let rogue: IssuedCert;
let apiPort: number;
let healthPort: number;
let InboxService: grpc.ServiceClientConstructor;
const victim = { app_code: 'lalu', user_id: 'victim_1' };
const clients: grpc.Client[] = [];

function client(address: string, credentials: grpc.ChannelCredentials): any {
  const c = new InboxService(address, credentials);
  clients.push(c);
  return c;
}

const call = (c: any, method: string, req: object): Promise<any> =>
  new Promise((resolve, reject) =>
    c[method](req, { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null, res: any) => (err ? reject(err) : resolve(res))),
  );
const refusal = async (c: any, method: string, req: object) => {
  try {
    await call(c, method, req);
  } catch (err) {
    return { code: (err as grpc.ServiceError).code, details: (err as grpc.ServiceError).details };
  }
  throw new Error(`${method} was served`);
};

beforeAll(async () => {
  pki = new TestPki();
  serverCa = pki.ca('server-ca');
  const gatewayCa = pki.ca('gateway-ca');
  pki.ca('other-ca'); // signs the impostor's certificate below
  const server = pki.issue('server-ca', 'notice-api', 'server');
  gateway = pki.issue('gateway-ca', 'gateway', 'client');
  rogue = pki.issue('other-ca', 'rogue', 'client');
  apiPort = await freePort();
  healthPort = await freePort();
  env = await createTestEnv({
    inbox: {
      enabled: true,
      page_token_secret: 'edge-secret',
      api_host: '0.0.0.0',
      api_port: apiPort,
      api_tls: { cert_file: server.certFile, key_file: server.keyFile, client_ca_file: gatewayCa.certFile },
    },
    health: { grpc_port: healthPort, http_port: 0 },
  });
  proc = await startPipeline(env.config, ['deliver', 'inbox-api']);
  await new InboxStore(env.notice).insert([
    {
      appCode: 'lalu',
      userId: 'victim_1',
      fact: { sourceName: 't', appCode: 'lalu', sourceEventId: 'secret-1' },
      noticeKind: 'activity_notice',
      eventType: 'SystemNotice',
      payload: '{"private":"yes"}',
      createdAtMs: Date.now(),
      expireAtMs: null,
    },
  ]);
  const pkg = grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, enums: String, defaults: true })) as any;
  InboxService = pkg.notice.inbox.v1.InboxService;
});

afterAll(async () => {
  for (const c of clients) c.close();
  await proc?.stop();
  await env?.close();
  pki?.remove();
});

describe('the inbox API answers only the gateway', () => {
  it('serves the gateway, whose client certificate chains to inbox.api_tls.client_ca_file', async () => {
    const gw = client(`127.0.0.1:${apiPort}`, grpc.credentials.createSsl(serverCa.cert, gateway.key, gateway.cert));
    const res = await call(gw, 'ListNotifications', { caller: victim });
    expect(res.notifications.map((n: any) => n.data_json)).toEqual(['{"private":"yes"}']);
  });

  it('refuses at the handshake a TLS client without a certificate, or with one from another CA', async () => {
    const anonymous = client(`127.0.0.1:${apiPort}`, grpc.credentials.createSsl(serverCa.cert));
    expect((await refusal(anonymous, 'ListNotifications', { caller: victim })).code).toBe(grpc.status.UNAVAILABLE);
    const impostor = client(`127.0.0.1:${apiPort}`, grpc.credentials.createSsl(serverCa.cert, rogue.key, rogue.cert));
    expect((await refusal(impostor, 'DeleteNotifications', { caller: victim, ids: ['1'] })).code).toBe(grpc.status.UNAVAILABLE);
    // Nothing the refused clients asked for happened.
    expect((await new InboxStore(env.notice).unreadCount({ appCode: 'lalu', userId: 'victim_1' }, [], 100)).count).toBe(1);
  });

  it('refuses a plaintext client', async () => {
    const plain = client(`127.0.0.1:${apiPort}`, grpc.credentials.createInsecure());
    expect((await refusal(plain, 'ListNotifications', { caller: victim })).code).toBe(grpc.status.UNAVAILABLE);
  });

  it('is not on the health port, which answers UNIMPLEMENTED for it', async () => {
    const health = client(`127.0.0.1:${healthPort}`, grpc.credentials.createInsecure());
    expect((await refusal(health, 'ListNotifications', { caller: victim })).code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it('refuses a request bigger than a legal one unread (RESOURCE_EXHAUSTED), and keeps serving', async () => {
    const gw = client(`127.0.0.1:${apiPort}`, grpc.credentials.createSsl(serverCa.cert, gateway.key, gateway.cert));
    const huge = { caller: victim, ids: Array.from({ length: 200_000 }, (_, i) => String(i + 1)) };
    expect((await refusal(gw, 'DeleteNotifications', huge)).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await call(gw, 'GetUnreadCount', { caller: victim })).unread.count).toBe(1);
  });
});

describe('an inbox API config that would be open is refused before anything starts', () => {
  const base = 'mysql: { url: "mysql://x/y" }\nredis: { url: "redis://x" }\ntencent_im: { app_code: lalu }\n';
  it('names inbox.api_tls and inbox.page_token_secret for a non-loopback host', () => {
    expect(() => parseConfigText(`${base}inbox: { api_host: 0.0.0.0 }\n`, 'c.yaml')).toThrow(
      /inbox\.api_tls: required[\s\S]*cert_file[\s\S]*key_file[\s\S]*client_ca_file[\s\S]*inbox\.page_token_secret: required/,
    );
    expect(() =>
      parseConfigText(`${base}inbox: { api_host: 10.0.0.5, page_token_secret: s, api_tls: { cert_file: a, key_file: b, client_ca_file: c } }\n`, 'c.yaml'),
    ).not.toThrow();
    expect(() => parseConfigText(`${base}inbox: { api_host: "::1" }\n`, 'c.yaml')).not.toThrow();
  });
});

describe('notice-service config check', () => {
  it('validates without starting anything: names an open inbox API and a TLS file that is not PEM, exit 2; lists the listeners of a good one, exit 0', async () => {
    const { spawnNotice } = await import('../helpers/spawn.ts');
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const base = 'mysql: { url: "mysql://root@127.0.0.1:1/x" }\nredis: { url: "redis://127.0.0.1:1" }\ntencent_im: { app_code: lalu }\n';
    const open = join(pki.dir, 'open.yaml');
    writeFileSync(open, `${base}inbox: { api_host: 0.0.0.0 }\n`);
    let run = spawnNotice(['config', 'check', '--config', open]);
    expect(await run.exited).toBe(2);
    expect(run.output()).toMatch(/inbox\.api_tls: required/);

    const notPem = join(pki.dir, 'not-pem.yaml');
    writeFileSync(join(pki.dir, 'garbage.pem'), 'hello');
    writeFileSync(
      notPem,
      `${base}inbox: { api_host: 0.0.0.0, page_token_secret: s, api_tls: { cert_file: ${gateway.certFile}, key_file: ${gateway.keyFile}, client_ca_file: ${join(pki.dir, 'garbage.pem')} } }\n`,
    );
    run = spawnNotice(['config', 'check', '--config', notPem]);
    expect(await run.exited).toBe(2);
    expect(run.output()).toMatch(/inbox\.api_tls\.client_ca_file: .*garbage\.pem is not a PEM CA certificate/);
    expect(run.output()).not.toMatch(/valid/);

    const good = join(pki.dir, 'good.yaml');
    writeFileSync(
      good,
      `${base}inbox: { api_host: 0.0.0.0, page_token_secret: s, api_tls: { cert_file: ${gateway.certFile}, key_file: ${gateway.keyFile}, client_ca_file: ${serverCa.certFile} } }\n`,
    );
    run = spawnNotice(['config', 'check', '--config', good]);
    expect(await run.exited).toBe(0);
    expect(run.output()).toMatch(/inbox API 0\.0\.0\.0:13010 .*mutual TLS/);
  });
});

describe('an inbox-api process', () => {
  it('needs no Redis to serve: it starts, answers and is ready with Redis unreachable (only live events and the IM read sync wait for it)', async () => {
    const port = await freePort();
    const own = await createTestEnv({ inbox: { enabled: true, api_port: port } });
    const unreachable = { ...own.config, redis: { ...own.config.redis, url: 'redis://127.0.0.1:1' } };
    const api = await startPipeline(unreachable, ['inbox-api']);
    const c = client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    try {
      expect((await call(c, 'GetUnreadCount', { caller: victim })).unread.count).toBe(0);
      const ready = await api.readiness();
      expect(ready).toMatchObject({ ready: true, checks: { mysql: 'ok', 'role:inbox-api': 'ok' } });
      expect(ready.checks).not.toHaveProperty('redis');
      expect(() => api.queues).toThrow(/uses no deliver queue/);
    } finally {
      await api.stop();
      await own.close();
    }
  });
});
