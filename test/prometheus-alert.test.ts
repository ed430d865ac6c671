import { afterEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { freePort } from './helpers/ports.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

/**
 * A real Prometheus (Debian's package) scrapes a running pipeline with the shipped rules, their windows and `for`
 * durations shortened to seconds: the failing-deliveries alert must fire once Tencent starts refusing every send,
 * and not before.
 */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let prometheus: ChildProcess | undefined;
let dir: string | undefined;

afterEach(async () => {
  if (prometheus && prometheus.exitCode === null) {
    prometheus.kill('SIGTERM');
    await new Promise((r) => prometheus!.once('exit', r));
  }
  await proc?.stop();
  await env?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  prometheus = proc = env = dir = undefined;
});

/** The shipped rules with every range and `for` in seconds instead of minutes, so the test takes seconds. */
function fastRules(): string {
  return readFileSync('deploy/prometheus/notice-service.rules.yml', 'utf8')
    .replace(/\[(\d+)m\]/g, '[$1s]')
    .replace(/\[1h\]/g, '[60s]')
    .replace(/for: (\d+)m/g, 'for: $1s');
}

async function firing(port: number): Promise<Array<{ labels: Record<string, string>; state: string }>> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/alerts`);
  return ((await res.json()) as { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } }).data.alerts;
}

describe('the shipped alert rules on a real Prometheus', () => {
  it('NoticeDeliveriesFailing fires when every send starts failing, and not while they succeed', async () => {
    const httpPort = await freePort();
    env = await createTestEnv({ health: { http_port: httpPort, grpc_port: 0 } });
    proc = await startPipeline(env.config);
    dir = mkdtempSync(join(tmpdir(), 'notice-prometheus-'));
    writeFileSync(join(dir, 'rules.yml'), fastRules());
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        'rule_files: [rules.yml]',
        'scrape_configs:',
        `  - job_name: notice-service`,
        `    static_configs: [{ targets: ["127.0.0.1:${httpPort}"] }]`,
        '',
      ].join('\n'),
    );
    const promPort = await freePort();
    prometheus = spawn(
      'prometheus',
      [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`],
      { stdio: 'ignore' },
    );
    await waitFor(
      async () => (await fetch(`http://127.0.0.1:${promPort}/-/ready`).catch(() => null))?.status,
      (s) => s === 200,
      30_000,
      'prometheus ready',
    );

    // Healthy traffic first: delivered, nothing fires.
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 20 }, (_, i) => balanceChanged(i + 1)),
    );
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 20,
      15_000,
      'healthy deliveries',
    );
    await new Promise((r) => setTimeout(r, 5000));
    expect((await firing(promPort)).filter((a) => a.labels.alertname === 'NoticeDeliveriesFailing')).toEqual([]);

    // Tencent refuses every recipient (90012, permanent): dead letters pile up at > 0.05/s.
    env.fakeIm.setFaults({ not_imported: Array.from({ length: 50 }, (_, i) => String(10000 + i)) });
    let n = 100;
    const writer = setInterval(
      () =>
        void insertWalletRows(
          env!.owner,
          env!.config.wallet_database,
          Array.from({ length: 5 }, () => balanceChanged(++n)),
        ).catch(() => undefined),
      500,
    );
    try {
      const alerts = await waitFor(
        async () => (await firing(promPort)).filter((a) => a.labels.alertname === 'NoticeDeliveriesFailing' && a.state === 'firing'),
        (list) => list.length > 0,
        60_000,
        'NoticeDeliveriesFailing firing',
      );
      expect(alerts[0]!.labels).toMatchObject({ error_code: '90012', severity: 'page' });
    } finally {
      clearInterval(writer);
    }
  });
});
