import express, { type Request, type Response } from 'express';
import type { Pool } from 'mysql2/promise';
import { failuresPerMinute, outcomesPerMinute } from '../src/ledger/queries.ts';
import { lineChartSvg } from '../src/observability/svg-chart.ts';
import { formatTime } from '../src/platform/clock.ts';
import type { PipelineSampler } from './pipeline-sampler.ts';

const COLORS = ['#2f80ed', '#d64545', '#8d99ae', '#f0b429', '#27ab83', '#9446ed'];

/**
 * `GET /outcomes/<channel>.svg?hours=3`: delivered, failed and superseded per minute from the ledger, with the
 * channel's quota per minute dashed when traffic comes within reach of it; `GET /queues.svg` and `/pending-age.svg` from the sampler. Server-rendered SVG.
 */
export function chartsRouter(deps: {
  pool: Pool;
  sampler: PipelineSampler;
  zone: string;
  channels: ReadonlyArray<{ name: string; rateLimitPerSecond: number | null; quotaCountsNotices: boolean }>;
}): express.Router {
  const router = express.Router();
  const hourLabel = (ms: number) => formatTime(ms, deps.zone).slice(11, 16);
  const hoursOf = (req: Request) => Math.min(24, Math.max(1, Number(req.query.hours ?? 3) || 3));
  const send = (res: Response, svg: string) => void res.type('image/svg+xml').set('cache-control', 'no-store').send(svg);
  // One scan per status serves every channel's chart, and a page's charts (and every operator's) share it for 30 s:
  // at 1k notices/s three hours is ~10 M index entries per status, too many to read per image.
  const cache = new Map<number, { atMs: number; rows: Promise<Awaited<ReturnType<typeof outcomesPerMinute>>> }>();
  const outcomes = (hours: number, sinceMs: number) => {
    const hit = cache.get(hours);
    if (hit && Date.now() - hit.atMs < 30_000) return hit.rows;
    // Delivered and superseded are final for good; failures are counted when they happened (a requeue moves the row).
    const rows = Promise.all([outcomesPerMinute(deps.pool, ['delivered', 'superseded'], sinceMs), failuresPerMinute(deps.pool, sinceMs)]).then(
      ([final, failed]) => [...final, ...failed.map((f) => ({ ...f, status: 'failed' as const }))],
    );
    cache.set(hours, { atMs: Date.now(), rows });
    rows.catch(() => cache.delete(hours));
    return rows;
  };

  router.get('/outcomes/:channel.svg', async (req: Request, res: Response) => {
    const channel = deps.channels.find((c) => c.name === req.params.channel);
    if (!channel)
      return void res
        .status(404)
        .type('text/plain')
        .send(`no channel ${String(req.params.channel).slice(0, 40)}`);
    const nowMinute = Math.floor(Date.now() / 60_000) * 60_000;
    const slots = Array.from({ length: hoursOf(req) * 60 }, (_, i) => nowMinute - (hoursOf(req) * 60 - 1 - i) * 60_000);
    const counts = (await outcomes(hoursOf(req), slots[0]!)).filter((r) => r.channel === channel.name);
    const seriesOf = (status: string) => slots.map((m) => counts.find((c) => c.status === status && c.minuteMs === m)?.count ?? 0);
    const series = [
      { name: 'delivered', color: COLORS[0]!, values: seriesOf('delivered') },
      { name: 'failed', color: COLORS[1]!, values: seriesOf('failed') },
      { name: 'superseded', color: COLORS[2]!, values: seriesOf('superseded') },
    ];
    const reference =
      channel.rateLimitPerSecond && channel.quotaCountsNotices ? { name: 'quota', value: channel.rateLimitPerSecond * 60, color: '#829ab1' } : undefined;
    send(res, lineChartSvg({ title: `${channel.name}: outcomes per minute`, slots, series, unit: '/min', hourLabel, reference }));
  });

  router.get('/queues.svg', (_req: Request, res: Response) => {
    const samples = deps.sampler.samples;
    const names = [...new Set(samples.flatMap((s) => Object.keys(s.queued)))];
    const series = names.map((name, i) => ({ name, color: COLORS[i % COLORS.length]!, values: samples.map((s) => s.queued[name] ?? null) }));
    send(res, lineChartSvg({ title: 'queued jobs per channel', slots: samples.map((s) => s.atMs), series, unit: 'jobs', hourLabel }));
  });

  router.get('/pending-age.svg', (_req: Request, res: Response) => {
    const samples = deps.sampler.samples;
    const series = [
      { name: 'oldest pending', color: COLORS[3]!, values: samples.map((s) => (s.oldestPendingMs === null ? 0 : Math.round(s.oldestPendingMs / 1000))) },
    ];
    send(res, lineChartSvg({ title: 'age of the oldest pending notice', slots: samples.map((s) => s.atMs), series, unit: 's', hourLabel }));
  });
  return router;
}
