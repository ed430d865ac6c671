import { describe, expect, it } from 'vitest';
import { lineChartSvg, spacedTicks } from '../src/observability/svg-chart.ts';

describe('chart axis labels', () => {
  it('never overlap: the start label gives way to a whole hour just after it', () => {
    const start = Date.UTC(2026, 11, 7, 18, 59);
    const slots = Array.from({ length: 181 }, (_, i) => start + i * 60_000); // 18:59 … 21:59, a slot a minute
    const svg = lineChartSvg({
      title: 't',
      slots,
      series: [{ name: 'a', color: '#000', values: slots.map(() => 1) }],
      unit: '/min',
      hourLabel: (ms) => new Date(ms).toISOString().slice(11, 16),
    });
    const labels = [...svg.matchAll(/<text x="([\d.]+)" y="\d+" font-size="10" text-anchor="middle"[^>]*>([^<]+)<\/text>/g)].map((m) => ({
      x: Number(m[1]),
      text: m[2],
    }));
    expect(labels.map((l) => l.text)).toEqual(['19:00', '20:00', '21:00']);
    for (let i = 1; i < labels.length; i++) expect(labels[i]!.x - labels[i - 1]!.x).toBeGreaterThanOrEqual(36);
    // A start far enough from the first hour keeps its label.
    expect(spacedTicks([{ x: 0 }, { x: 100 }, { x: 200 }], 36)).toHaveLength(3);
    expect(spacedTicks([{ x: 0 }, { x: 10 }, { x: 20 }, { x: 200 }], 36).map((t) => t.x)).toEqual([10, 200]);
  });
});

describe('a quota reference line', () => {
  const slots = Array.from({ length: 60 }, (_, i) => Date.UTC(2026, 11, 8, 10, i));
  const chart = (peak: number) =>
    lineChartSvg({
      title: 'c2c',
      slots,
      series: [{ name: 'delivered', color: '#000', values: slots.map((_, i) => (i === 30 ? peak : 1)) }],
      unit: '/min',
      hourLabel: () => '',
      reference: { name: 'quota', value: 12_000, color: '#888' },
    });
  const axisTop = (svg: string) => Number(/>(\d+) \/min<\/text>/.exec(svg)?.[1]);

  it('is left out when traffic is far below it, so the traffic keeps the axis, and the legend names it', () => {
    const svg = chart(400); // 400/min of real traffic against 12,000/min: the flat line
    expect(axisTop(svg)).toBe(500);
    expect(svg).not.toContain('class="reference"');
    expect(svg).toContain('quota 12,000/min, off scale');
  });

  it('is drawn, and sizes the axis, once the traffic reaches a quarter of it', () => {
    const svg = chart(3_000);
    expect(axisTop(svg)).toBe(20_000);
    expect(svg).toContain('class="reference" data-series="quota"');
    expect(svg).not.toContain('off scale');
  });
});
