import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { ConfigError, parseConfigText } from '../src/composition/load.ts';
import { listenerSummary } from '../src/composition/check.ts';
import { configReference } from '../src/composition/reference.ts';
import { inspectEvent } from '../src/ops/cli-ops.ts';
import { EXAMPLE_MODULES } from './examples/registry.ts';
import { giftModule } from './examples/sources/gift/module.ts';
import { configSchemaFor } from '../src/composition/schema.ts';
import { channelRoutes } from '../src/channels/routing.ts';
import { webhookModule } from './examples/channels/webhook/module.ts';
import { WebhookReceiver } from './examples/channels/webhook/probe.ts';
import { channelContract } from './channels/conformance.ts';

/**
 * The promise of the module wiring, kept: a third channel (test/examples/channels/webhook) and a fourth source
 * (test/examples/sources/gift) are each one folder plus one line in test/examples/registry.ts, and show up in config
 * validation, ingest, delivery, metrics, the dashboard and `inspect` with no other file knowing of them.
 */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let receiver: WebhookReceiver | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  await receiver?.close();
  env = proc = receiver = undefined;
});

const BASE = 'mysql: { url: "mysql://root@127.0.0.1:3306/x" }\nredis: { url: "redis://127.0.0.1:6379" }\ntencent_im: { app_code: lalu }\n';

describe('example modules', () => {
  it('two modules with one name, config key or source name are refused at start-up, naming both', () => {
    const twice = () => configSchemaFor({ channels: [...EXAMPLE_MODULES.channels, webhookModule], sources: EXAMPLE_MODULES.sources });
    expect(twice).toThrow(
      /channel name "webhook" is claimed twice: by channel module "webhook" \(channels\[3\]\) and by channel module "webhook" \(channels\[4\]\)/,
    );
    expect(twice).toThrow(/config key "webhook" is claimed twice/);
    // Another module under a name already taken: a source named like the wallet's, a channel block named like a core key.
    const walletAgain = { ...giftModule, sourceName: 'wallet_outbox' };
    expect(() => configSchemaFor({ channels: EXAMPLE_MODULES.channels, sources: [...EXAMPLE_MODULES.sources.slice(0, 3), walletAgain] })).toThrow(
      /source name "wallet_outbox" is claimed twice: by source module "wallet" \(sources\[0\]\) and by source module "gift" \(sources\[3\]\)/,
    );
    const coreClash = { ...webhookModule, configShape: { redis: webhookModule.configShape.webhook } };
    expect(() => configSchemaFor({ channels: [...EXAMPLE_MODULES.channels.slice(0, 3), coreClash], sources: EXAMPLE_MODULES.sources })).toThrow(
      /config key "redis" is claimed twice: by the core config and by channel module "webhook"/,
    );
    // The registries as they are compose without a word.
    expect(() => configSchemaFor(EXAMPLE_MODULES)).not.toThrow();
  });

  it('config validation knows their keys (defaults, errors naming the key) and the registries alone do not', () => {
    const config = parseConfigText(
      `${BASE}webhook: { enabled: true, url: "http://127.0.0.1:1/n" }\ngift_notice_worker: { enabled: true }\n`,
      'c.yaml',
      {},
      EXAMPLE_MODULES,
    );
    expect((config as unknown as Record<string, any>).webhook).toMatchObject({ enabled: true, kinds: ['gift_notice'], request_timeout: 2000 });
    expect((config as unknown as Record<string, any>).gift_database).toBe('hyapp_gift');
    const bad = () =>
      parseConfigText(`${BASE}webhook: { url: "not a url", retries: 3 }\ngift_notice_worker: { poll_interval: "soon" }\n`, 'c.yaml', {}, EXAMPLE_MODULES);
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/webhook\.retries: unknown key/);
    expect(bad).toThrow(/webhook\.url: /);
    expect(bad).toThrow(/gift_notice_worker\.poll_interval: /);
    expect(() => parseConfigText(`${BASE}webhook: { enabled: true }\n`, 'c.yaml', {})).toThrow(/webhook: unknown key/);
    // The generated reference lists them under their modules.
    const reference = configReference(EXAMPLE_MODULES);
    expect(reference).toContain('## Channel `webhook` (Notices POSTed to a webhook (example channel))');
    expect(reference).toMatch(/\| `webhook.request_timeout` \| duration .* \| `2s` \|/);
    expect(reference).toContain('## Source `gift_outbox` (gift-service)');
    expect(reference).toContain('| `gift_notice_worker.poll_interval` |');
    expect(() => parseConfigText(`${BASE}channel_overrides: { GiftReceived: [webhook, fax] }\n`, 'c.yaml', {}, EXAMPLE_MODULES)).toThrow(
      /unknown channel "fax" \(channels: tencent_im_c2c, inbox, tencent_push, webhook\)/,
    );
  });

  it('a webhook-only deployment (no Tencent block at all) starts and delivers; the core needs only its apps list', async () => {
    receiver = new WebhookReceiver();
    const url = await receiver.start();
    const text = `mysql: { url: "mysql://root@127.0.0.1:3306/x" }\nredis: { url: "redis://127.0.0.1:6379" }\napps: { lalu: {} }\ninbox: { enabled: false }\nwebhook: { enabled: true, url: "${url}" }\n`;
    const parsed = parseConfigText(text, 'webhook-only.yaml', {}, EXAMPLE_MODULES);
    expect(Object.keys(parsed.apps)).toEqual(['lalu']);
    expect(parsed.tencent_im.enabled).toBe(false);
    // A malformed fact whose kind goes nowhere is filed under the deployment's first routed channel, not C2C's.
    expect(channelRoutes(parsed).fallback).toBe('webhook');
    env = await createTestEnv(
      {
        tencent_im: undefined,
        apps: { lalu: {} },
        webhook: { enabled: true, url },
        gift_notice_worker: { enabled: true, poll_interval: '50ms' },
        wallet_notice_worker: { enabled: false },
      },
      { modules: EXAMPLE_MODULES },
    );
    expect(readFileSync(env.configFile, 'utf8')).not.toContain('tencent_im');
    await env.owner.query(
      `INSERT INTO \`${env.id}_gift\`.gift_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES ('lalu', 'w1', 'GiftReceived', '50001', ?, 1700000000000), ('hala', 'w2', 'GiftReceived', '50002', ?, 1700000000000)`,
      [JSON.stringify({ gift_id: 'g1', sender_user_id: '1', count: 1 }), JSON.stringify({ gift_id: 'g2', sender_user_id: '1', count: 2 })],
    );
    proc = await startPipeline(env.config, ['ingest', 'deliver']);
    const rows = async () =>
      (await env!.notice.query<any[]>('SELECT app_code, channel, status, last_error_code FROM notice_delivery_events ORDER BY app_code'))[0].map((r) =>
        `${r.app_code} ${r.channel} ${r.status} ${r.last_error_code ?? ''}`.trim(),
      );
    // lalu's gift reaches the webhook; hala is not in the apps list, so its fact fails UNKNOWN_APP unsent.
    await waitFor(rows, (r) => r.length === 2 && r.every((x) => / (delivered|failed)\b/.test(x)), 20_000, 'both gifts settled');
    expect(await rows()).toEqual(['hala webhook failed UNKNOWN_APP', 'lalu webhook delivered']);
    expect([...receiver.received.values()].map((n) => n.user_id)).toEqual(['50001']);
    expect(env.fakeIm.messages()).toEqual([]);
  });

  it('a gift fact reaches the webhook and C2C once each; metrics, the dashboard, inspect and config check show both modules', async () => {
    receiver = new WebhookReceiver();
    const url = await receiver.start();
    env = await createTestEnv(
      {
        webhook: { enabled: true, url },
        gift_notice_worker: { enabled: true, poll_interval: '50ms' },
        wallet_notice_worker: { enabled: false },
        dashboard: { port: 0, auth: { enabled: false } },
      },
      { modules: EXAMPLE_MODULES },
    );
    const gifts = Array.from({ length: 12 }, (_, i) => [
      `gift_${i}`,
      i === 11 ? 'NotAGift' : 'GiftReceived',
      String(50000 + i),
      JSON.stringify({ gift_id: `g${i}`, sender_user_id: '1', count: 1 + i }),
    ]);
    await env.owner.query(
      `INSERT INTO \`${env.id}_gift\`.gift_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES ${gifts.map(() => "('lalu', ?, ?, ?, ?, 1700000000000)").join(', ')}`,
      gifts.flat(),
    );
    proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
    const statuses = async () =>
      Object.fromEntries(
        (
          await env!.notice.query<any[]>('SELECT CONCAT(source_name, ":", channel, ":", status) AS k, COUNT(*) AS n FROM notice_delivery_events GROUP BY k')
        )[0].map((r) => [r.k, Number(r.n)]),
      );
    await waitFor(
      statuses,
      (c) =>
        (c['gift_outbox:tencent_im_c2c:failed'] ?? 0) > 0 || (c['gift_outbox:webhook:delivered'] === 11 && c['gift_outbox:tencent_im_c2c:delivered'] === 11),
      20_000,
      'gift notices delivered on both channels',
    );
    expect(
      (
        await env.notice.query<any[]>(
          "SELECT DISTINCT CONCAT(channel, ' ', last_error_code, ' ', last_error) AS e FROM notice_delivery_events WHERE status = 'failed'",
        )
      )[0],
    ).toEqual([]);
    expect(receiver.received.size).toBe(11);
    expect([...receiver.received.values()].map((n) => n.notice_kind)).toEqual(Array(11).fill('gift_notice'));
    expect(env.fakeIm.messages().filter((m) => !m.duplicate).length).toBe(11);

    const metrics = await proc.metrics.registry.metrics();
    expect(metrics).toMatch(/notice_deliveries_total\{source="gift_outbox",channel="webhook",notice_kind="gift_notice",outcome="delivered"[^}]*\} 11/);
    expect(metrics).toMatch(/notice_ingest_[a-z_]+\{source="gift_outbox"[^}]*\}/);

    const base = `http://127.0.0.1:${proc.dashboard!.port}/admin`;
    const summary = await (await fetch(`${base}/api/notices/summary`)).json();
    expect(summary.channels.map((c: { channel: string }) => c.channel)).toContain('webhook');
    expect(summary.by_status).toContainEqual(expect.objectContaining({ status: 'delivered', channel: 'webhook', count: 11 }));
    expect((await fetch(`${base}/api/notices/failed?channel=webhook`)).status).toBe(200);
    const boards = await (await fetch(`${base}/queues/api/queues?activeQueue=&page=1&jobsPerPage=1`)).json();
    expect(boards.queues.find((q: { name: string }) => q.name === 'deliver-webhook')).toMatchObject({
      description: expect.stringContaining('example channel'),
    });
    const page = await (await fetch(`${base}/notices`)).text();
    expect(page).toContain('"webhook"');

    const inspected = (await inspectEvent(env.config, 'gift_3')) as Array<{ channel: string; status: string; source_name: string }>;
    expect(inspected.map((r) => `${r.source_name}:${r.channel}:${r.status}`).sort()).toEqual([
      'gift_outbox:tencent_im_c2c:delivered',
      'gift_outbox:webhook:delivered',
    ]);
    expect(await listenerSummary(env.config)).toContainEqual(expect.stringMatching(/^dashboard /));
  });
});

// The example channel keeps the same contract as the registered ones, through the probe in its folder.
channelContract([webhookModule], EXAMPLE_MODULES);
