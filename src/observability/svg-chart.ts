/** One line of a chart: its name, colour and a value per slot (null = no sample). */
export interface ChartSeries {
  name: string;
  color: string;
  values: ReadonlyArray<number | null>;
  dashed?: boolean;
}

export interface ChartSpec {
  title: string;
  /** The slots' start times (ms), oldest first; labels are drawn at whole hours. */
  slots: readonly number[];
  series: readonly ChartSeries[];
  unit: string;
  /** A line drawn across the plot (e.g. a provider's quota), only when the data come within reach of it. */
  reference?: { name: string; value: number; color: string };
  /** Labels the x axis in the operator's zone (display.time_zone). */
  hourLabel: (ms: number) => string;
  width?: number;
  height?: number;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/**
 * A line chart as an SVG document, pure: the same series always draw the same picture. Server-rendered so the
 * dashboard needs no chart library in the page and its CSP stays 'self'.
 */
export function lineChartSvg(spec: ChartSpec): string {
  const width = spec.width ?? 560;
  const height = spec.height ?? 180;
  const pad = { left: 72, right: 16, top: 24, bottom: 36 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const n = Math.max(1, spec.slots.length - 1);
  const peak = Math.max(1, ...spec.series.flatMap((s) => s.values.filter((v): v is number => v !== null)));
  const drawReference = spec.reference !== undefined && referenceWithinReach(peak, spec.reference.value);
  const top = niceCeiling(drawReference ? Math.max(peak, spec.reference!.value) : peak);
  const x = (i: number) => pad.left + (i / n) * plotW;
  const y = (v: number) => pad.top + plotH - (v / top) * plotH;
  const lines = spec.series.map((s) => {
    const segments: string[] = [];
    let current: string[] = [];
    s.values.forEach((v, i) => {
      if (v === null) {
        if (current.length) segments.push(current.join(' '));
        current = [];
      } else current.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
    });
    if (current.length) segments.push(current.join(' '));
    return segments
      .map(
        (points) =>
          `<polyline class="series" data-series="${esc(s.name)}" fill="none" stroke="${esc(s.color)}" ` +
          `stroke-width="1.5"${s.dashed ? ' stroke-dasharray="4 3"' : ''} points="${points}"/>`,
      )
      .join('');
  });
  const hourTicks = spacedTicks(
    spec.slots.map((ms, i) => ({ ms, x: x(i) })).filter(({ ms }, k) => ms % 3_600_000 === 0 || k === 0),
    MIN_LABEL_GAP_PX,
  ).map(
    ({ ms, x: at }) => `<text x="${at.toFixed(1)}" y="${height - 18}" font-size="10" text-anchor="middle" fill="#627d98">${esc(spec.hourLabel(ms))}</text>`,
  );
  const ref = spec.reference;
  if (ref && drawReference) {
    lines.push(
      `<line class="reference" data-series="${esc(ref.name)}" x1="${pad.left}" y1="${y(ref.value).toFixed(1)}" x2="${pad.left + plotW}" ` +
        `y2="${y(ref.value).toFixed(1)}" stroke="${esc(ref.color)}" stroke-width="1.5" stroke-dasharray="4 3"/>`,
    );
  }
  const legendItems = [
    ...spec.series.map((s) => ({ color: s.color, text: `${s.dashed ? '- - ' : '— '}${s.name}` })),
    ...(ref && drawReference ? [{ color: ref.color, text: `- - ${ref.name}` }] : []),
  ];
  const offScale =
    ref && !drawReference
      ? `<text class="reference-note" x="${width - pad.right}" y="14" font-size="10" text-anchor="end" ` +
        `fill="#627d98">${esc(ref.name)} ${ref.value.toLocaleString('en')}${esc(spec.unit)}, off scale</text>`
      : '';
  const legend = legendItems.map(
    (item, i) => `<text class="legend" x="${pad.left + i * 120}" y="${height - 4}" font-size="11" fill="${esc(item.color)}">${esc(item.text)}</text>`,
  );
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" ` +
    `aria-label="${esc(spec.title)}">
<title>${esc(spec.title)}</title>
<rect width="100%" height="100%" fill="#fff"/>
<text x="${pad.left}" y="14" font-size="12" font-weight="600" fill="#1f2933">${esc(spec.title)}</text>
${offScale}
<line x1="${pad.left}" y1="${pad.top + plotH}" x2="${pad.left + plotW}" y2="${pad.top + plotH}" stroke="#bcccdc"/>
<line x1="${pad.left}" y1="${pad.top}" x2="${pad.left + plotW}" y2="${pad.top}" stroke="#eef2f7"/>
<text x="${pad.left - 4}" y="${pad.top + 4}" font-size="10" text-anchor="end" fill="#627d98">${top} ${esc(spec.unit)}</text>
<text x="${pad.left - 4}" y="${pad.top + plotH}" font-size="10" text-anchor="end" fill="#627d98">0</text>
${hourTicks.join('\n')}
${lines.join('\n')}
${legend.join('\n')}
</svg>`
  );
}

/**
 * A reference line is worth its place when the data reach a quarter of it; further off it would flatten real traffic
 * (400/min against a 12,000/min quota) into the axis, so it is named in the legend instead.
 */
export function referenceWithinReach(peak: number, reference: number): boolean {
  return reference > 0 && peak * 4 >= reference;
}

/** A label "HH:MM" at font size 10 is ~30 px wide: centres closer than this overlap. */
const MIN_LABEL_GAP_PX = 36;

/**
 * The axis labels that do not overlap, left to right; the first one (the chart's start, usually not a whole hour)
 * gives way to a whole hour right after it.
 */
export function spacedTicks<T extends { x: number }>(ticks: readonly T[], minGapPx: number): T[] {
  const kept: T[] = [];
  ticks.forEach((tick, i) => {
    const previous = kept.at(-1);
    if (previous && tick.x - previous.x < minGapPx) {
      if (i === 1) kept[kept.length - 1] = tick; // the start label yields to the hour
      return;
    }
    kept.push(tick);
  });
  return kept;
}

/** 1, 2, 5 × 10^k at or above the value: axis tops a reader can take in at a glance. */
export function niceCeiling(value: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(Math.max(1, value)));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}
