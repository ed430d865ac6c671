import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, TEST_SECRET, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { freePort } from './helpers/ports.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { spawnNotice, stopGracefully, waitForOutput, type Spawned } from './helpers/spawn.ts';
import { errorCodeLabel } from '../src/observability/error-code-label.ts';
import { classifyErrorCode } from '../src/tencent-im/error-codes.ts';
import { tencentImC2cModule } from '../src/channels/tencent-im-c2c/module.ts';
import { redactProviderText } from '../src/tencent-im/redact.ts';

/**
 * A hostile or careless provider: an ErrorInfo that echoes the request URL (with the admin UserSig), and a flood of
 * invented error codes. Neither may reach logs, the ledger, the history, pages, or the metric series count.
 */
let env: TestEnv | undefined;
let procs: Spawned[] = [];
afterEach(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  procs = [];
  await env?.close();
  env = undefined;
});

const SIG = /eJ[wyz][A-Za-z0-9*_-]{40,}/;

describe('provider text and codes', () => {
  it('an ErrorInfo that echoes the request URL leaves no UserSig anywhere; 231 invented codes make a bounded label set', async () => {
    const httpPort = await freePort();
    const password = 'provider-text-ops-pass';
    env = await createTestEnv({
      log: { level: 'trace' },
      wallet_notice_worker: { max_retry_count: 0 },
      health: { http_port: httpPort, grpc_port: 0 },
      dashboard: { port: await freePort(), auth: { username: 'ops', password }, environment: { label: 'test', color: '#b00020' } },
    });
    const codes = Array.from({ length: 231 }, (_, i) => 95_000 + i);
    env.fakeIm.setFaults({ errors: codes.map((code) => ({ code, count: 1, info: `invalid request, received {url}` })) });
    const all = spawnNotice(['all', '--config', env.configFile]);
    procs.push(all);
    const dashboard = await startPipeline({ ...env.config, health: { ...env.config.health, http_port: 0 } }, ['dashboard']);
    await waitForOutput(all, /notice-service started/);
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 231 }, (_, i) => balanceChanged(i + 1)),
    );
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.failed === 231,
      60_000,
      'every row failed with its own code',
    );

    // The fake really echoed the sig: the raw answer would have carried it.
    const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
    const series = metrics.split('\n').filter((l) => l.startsWith('notice_deliveries_total{'));
    expect(series.length).toBeLessThanOrEqual(3);
    expect(series.join('\n')).toContain('error_code="other"} 231');

    const base = `http://127.0.0.1:${env.config.dashboard.port}/admin/api/notices`;
    const headers = { authorization: `Basic ${Buffer.from(`ops:${password}`).toString('base64')}` };
    const failedJson = await (await fetch(`${base}/failed?page_size=200`, { headers })).text();
    expect(failedJson).toContain('invalid request, received /v4/openim/sendmsg?sdkappid=');
    expect(failedJson).toContain('usersig=[redacted]');
    const byEvent = await (await fetch(`${base}?event_id=${encodeURIComponent(balanceChanged(1).event_id!)}`, { headers })).text();
    await Promise.all([stopGracefully(all), dashboard.stop()]);

    const [rows] = await env.notice.query<any[]>(
      "SELECT CONCAT_WS(' ', last_error_code, last_error) AS t FROM notice_delivery_events UNION ALL SELECT CONCAT_WS(' ', error_code, error_message) FROM notice_delivery_history",
    );
    const stored = rows.map((r) => String(r.t)).join('\n');
    expect(stored).toContain('usersig=[redacted]');
    expect(stored).toContain('95230'); // the ledger keeps the raw code
    for (const text of [all.output(), stored, failedJson, byEvent]) {
      expect(text).not.toMatch(SIG);
      expect(text).not.toContain(TEST_SECRET);
    }
  });

  it('labels, classes and redaction as pure functions', () => {
    // The Tencent channels name their documented codes; the core alone knows none, so a numeric code is `other`.
    const tencent = tencentImC2cModule.documentedErrorCode;
    expect(new Set(Array.from({ length: 231 }, (_, i) => errorCodeLabel(String(95_000 + i), tencent)))).toEqual(new Set(['other']));
    expect(errorCodeLabel('90012')).toBe('other');
    expect([
      errorCodeLabel('90012', tencent),
      errorCodeLabel('HTTP_502'),
      errorCodeLabel('HTTP_404'),
      errorCodeLabel('ECONNRESET'),
      errorCodeLabel('SEND_INTERRUPTED'),
      errorCodeLabel('weird code'),
      errorCodeLabel(''),
    ]).toEqual(['90012', 'HTTP_5xx', 'HTTP_4xx', 'ECONNRESET', 'SEND_INTERRUPTED', 'other', '']);
    // 90057 is a rate limit for sendmsg but "DataId longer than 64 bytes" for timpush/batch: permanent there.
    expect(classifyErrorCode(90057, 'im')).toBe('rate_limited');
    expect(classifyErrorCode(90057, 'push')).toBe('permanent');
    const sig = 'eJwtzEEKgjAQQNG7zNpFEo3JXbRpEVQQ7YJhJk0wM8aJFNHdK7S7-v4PsHIMRTfqBxEl';
    expect(redactProviderText(`bad ?sdkappid=1&usersig=${sig}&x=1 key s3cr3t-key-value \u202Eevil`, [sig, 's3cr3t-key-value'])).toBe(
      'bad ?sdkappid=1&usersig=[redacted]&x=1 key [redacted] evil',
    );
    expect(redactProviderText(`echo UserSig=abc&SIG=def ${sig}`, [])).toBe(`echo UserSig=[redacted]&SIG=[redacted] ${sig}`);
  });
});
