import { afterEach, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { createTestEnv, waitFor, type TestEnv, MYSQL_HOST, MYSQL_PORT, mysqlServerVia } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { freePort } from './helpers/ports.ts';
import { TcpProxy } from './helpers/tcp-proxy.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let dbProxy: TcpProxy | undefined;
afterEach(async () => {
  await proc?.stop();
  await dbProxy?.down();
  await env?.close();
  proc = env = dbProxy = undefined;
});

function grpcCheck(port: number): Promise<string> {
  const Client = grpc.makeGenericClientConstructor(healthService as grpc.ServiceDefinition, 'Health');
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as any;
  return new Promise((resolve, reject) => {
    client.check({ service: '' }, { deadline: Date.now() + 3000 }, (err: Error | null, res: { status: string }) => {
      client.close();
      if (err) reject(err);
      else resolve(res.status);
    });
  });
}

describe('health and metrics', () => {
  it('serves /healthz, /readyz, /metrics and gRPC health, following MySQL availability', async () => {
    dbProxy = new TcpProxy(MYSQL_HOST, MYSQL_PORT);
    await dbProxy.start();
    const [httpPort, grpcPort] = [await freePort(), await freePort()];
    env = await createTestEnv({ health: { http_port: httpPort, grpc_port: grpcPort } }, { mysqlServerForService: mysqlServerVia(dbProxy.port) });
    env.fakeIm.setFaults({ errors: [{ code: 70500, count: 1 }], not_imported: ['10003'] });
    await insertWalletRows(env.owner, env.config.wallet_database, [
      balanceChanged(1),
      balanceChanged(2),
      balanceChanged(3),
      { ...balanceChanged(4), user_id: null },
    ]);
    await insertWalletRows(env.owner, env.config.wallet_database, [{ event_id: 'x', event_type: 'WalletFrozen', user_id: '1', payload: '{}' }]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2 && c.failed === 2,
    );

    const url = `http://127.0.0.1:${httpPort}`;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      ready: true,
      checks: { mysql: 'ok', redis: 'ok', 'role:ingest': 'ok', 'role:deliver': 'ok', 'source:wallet_outbox': 'ok' },
    });
    expect(await grpcCheck(grpcPort)).toBe('SERVING');

    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('notice_ingest_events_total{source="wallet_outbox",event_type="WalletBalanceChanged",result="ingested"} 3');
    expect(metrics).toContain('notice_ingest_events_total{source="wallet_outbox",event_type="WalletBalanceChanged",result="malformed"} 1');
    expect(metrics).toContain('notice_ingest_events_total{source="wallet_outbox",event_type="other",result="skipped"} 1');
    expect(metrics).toContain(
      'notice_deliveries_total{source="wallet_outbox",channel="tencent_im_c2c",notice_kind="wallet_notice",outcome="delivered",error_code=""} 2',
    );
    expect(metrics).toContain(
      'notice_deliveries_total{source="wallet_outbox",channel="tencent_im_c2c",notice_kind="wallet_notice",outcome="failed",error_code="90012"} 1',
    );
    expect(metrics).toContain(
      'notice_deliveries_total{source="wallet_outbox",channel="tencent_im_c2c",notice_kind="wallet_notice",outcome="retryable",error_code="70500"} 1',
    );
    expect(metrics).toContain('notice_delivery_retries_total{source="wallet_outbox",channel="tencent_im_c2c"} 1');
    expect(metrics).toMatch(/notice_send_latency_seconds_count\{channel="tencent_im_c2c",outcome="delivered"\} 2/);
    expect(metrics).toMatch(/notice_end_to_end_latency_seconds_count\{source="wallet_outbox",channel="tencent_im_c2c"\} 2/);
    // Three first sends and the 70500 one's retry each waited for a rate slot.
    expect(metrics).toMatch(/notice_send_slot_wait_seconds_count\{channel="tencent_im_c2c",app="lalu"\} 4/);
    expect(metrics).toContain('notice_ingest_rows_behind{source="wallet_outbox"} 0');
    expect(metrics).toContain('notice_ingest_open_gap_ids{source="wallet_outbox"} 0');
    expect(metrics).toMatch(/notice_queue_jobs\{queue="deliver-tencent-im-c2c-wallet_notice",state="failed"\} 1/);
    expect(metrics).toMatch(/notice_ingest_seconds_since_last_event\{source="wallet_outbox"\} \d/);
    expect(metrics).toContain('notice_process_resident_memory_bytes');

    await dbProxy.down();
    const notReady = await fetch(`${url}/readyz`);
    expect(notReady.status).toBe(503);
    expect((await notReady.json()).checks.mysql).toMatch(/^down/);
    expect(await grpcCheck(grpcPort)).toBe('NOT_SERVING');
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    await dbProxy.up();
    await waitFor(
      () => grpcCheck(grpcPort).catch(() => 'x'),
      (s) => s === 'SERVING',
      15_000,
      'SERVING again',
    );
  });
});

describe('a scrape with a backend that does not answer', () => {
  it('returns every other metric and marks the silent reading stale, instead of hanging', async () => {
    const { NoticeMetrics } = await import('../src/observability/metrics.ts');
    const metrics = new NoticeMetrics({ processMetrics: false, collectDeadlineMs: 100 });
    let started = 0;
    metrics.onScrape('queue_jobs', () => {
      started++;
      return new Promise<void>(() => undefined); // a BullMQ count waiting for Redis
    });
    metrics.onScrape('readiness', async () => void metrics.ready.set(1));
    const text = await metrics.render();
    expect(text).toMatch(/^notice_scrape_stale\{collector="queue_jobs"\} 1$/m);
    expect(text).toMatch(/^notice_scrape_stale\{collector="readiness"\} 0$/m);
    expect(text).toMatch(/^notice_ready 1$/m);
    // The next scrape waits on the count still in flight instead of queueing another behind it.
    expect(await metrics.render()).toMatch(/^notice_scrape_stale\{collector="queue_jobs"\} 1$/m);
    expect(started).toBe(1);
  });
});
