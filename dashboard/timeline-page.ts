import { escapeHtml } from './notices-page.ts';
import { allErrorGuideEntries, errorAnchor } from '../src/ledger/error-guide.ts';

interface PageOptions {
  base: string;
  environment: { label: string; color: string };
  channels: readonly string[];
  statuses: readonly string[];
  zone: string;
}

export const STYLE =
  `
 body{font-family:system-ui,sans-serif;margin:0;color:#1f2933}
 header{display:flex;flex-wrap:wrap;gap:12px 16px;align-items:center;padding:12px 16px;background:#102a43;color:#fff}
 header a{color:#bcccdc} .env{padding:2px 8px;border-radius:4px;font-size:12px}
 main{padding:12px 16px;max-width:1100px} .muted{color:#627d98;font-size:13px}
 form.filters{display:flex;flex-wrap:wrap;gap:8px;margin-bottom:12px} form.filters label{display:flex;flex-direction:column;font-size:12px;color:#486581}
 form.filters input,form.filters select{padding:6px;min-width:0;width:150px;max-width:100%} form.filters button{padding:6px 14px;align-self:flex-end}
 ol#facts{list-style:none;margin:0;padding:0} li.fact{border-bottom:1px solid #d9e2ec;padding:8px 0}
 li.fact > button.line{all:unset;cursor:pointer;display:flex;flex-wrap:wrap;gap:4px 12px;align-items:baseline;width:100%}
 .when{font-variant-numeric:tabular-nums;color:#486581;font-size:13px} .what{font-weight:600} .id{font-size:12px;color:#627d98;word-break:break-all}
 .badges{display:flex;flex-wrap:wrap;gap:6px;margin-top:4px} .badge{border-radius:10px;padding:2px 8px;font-size:12px;border:1px solid #bcccdc}
 .badge.delivered{background:#e3f9e5;border-color:#7bc47f} .badge.failed{background:#ffe3e3;border-color:#e66a6a} ` +
  `.badge.retryable,.badge.delivering,.badge.pending{background:#fff3c4;border-color:#f0b429}
 .badge.superseded,.badge.delivered_unconfirmed{background:#eef2f7}
 .detail{margin:6px 0 0 8px;font-size:13px} .detail h4{margin:8px 0 2px;font-size:13px} .reason{margin:2px 0} .todo{margin:2px 0;color:#334e68}
 ol.steps{margin:2px 0;padding-left:18px} pre{white-space:pre-wrap;word-break:break-all;font-size:12px;background:#f5f7fa;padding:6px;max-width:100%}
 table{border-collapse:collapse} td,th{border-bottom:1px solid #d9e2ec;padding:6px;text-align:left;vertical-align:top;font-size:13px}
`;

export function header(options: Pick<PageOptions, 'base' | 'environment'>, current: string): string {
  const env = escapeHtml(options.environment.label);
  const link = (path: string, text: string) => (text === current ? `<span>${text}</span>` : `<a href="${escapeHtml(options.base + path)}">${text}</a>`);
  return `<header><strong>notice-service</strong>
<span class="env" style="background:${escapeHtml(options.environment.color)}">${env}</span>${link('/timeline', 'Timeline')}${link('/failures', 'Failures')}${link('/notices', 'Notices')}${link('/queues', 'Queues (bull-board)')}${link('/errors', 'Error codes')}</header>`;
}

/**
 * A user's timeline: did user X get notice Y, and if not, why. Filters live in the URL (a plain GET form), so a link
 * is the whole question; one line per fact, a badge per channel, the reason in words, details on click. Every value
 * is inserted as text, never as HTML.
 */
export function timelinePage(options: PageOptions): string {
  const config = JSON.stringify({ api: `${options.base}/api/notices`, errors: `${options.base}/errors`, zone: options.zone }).replace(/</g, '\\u003c');
  const select = (name: string, label: string, values: readonly string[]) =>
    `<label>${label}<select name="${name}">
<option value="">any</option>${values.map((v) => `<option value="${escapeHtml(v)}">${escapeHtml(v)}</option>`).join('')}</select></label>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>notice-service · timeline</title>
<style>${STYLE}</style></head>
<body>
${header(options, 'Timeline')}
<main>
 <form class="filters" method="get" aria-label="filters">
  <label>user<input name="user_id" placeholder="10001" autocomplete="off"></label>
  <label>event id<input name="event_id" placeholder="tx_…:WalletBalanceChanged:…" autocomplete="off"></label>
  <label>kind<input name="kind" placeholder="room_notice"></label>
  ${select('status', 'status', options.statuses)}
  ${select('channel', 'channel', options.channels)}
  <label>error code<input name="error_code" placeholder="90012"></label>
  <label>since<input name="since" placeholder="24h or 2026-12-01T00:00Z"></label>
  <label>until<input name="until" placeholder="1h or an ISO time"></label>
  <button type="submit">Show</button>
 </form>
 <p class="muted" id="summary">Times in ${escapeHtml(options.zone)}.</p>
 <ol id="facts" aria-label="facts, newest first"></ol>
 <p><a id="older" hidden>older ›</a></p>
</main>
<script type="application/json" id="page-config">${config}</script>
<script src="${escapeHtml(`${options.base}/assets`)}/visible.js"></script>
<script src="${escapeHtml(`${options.base}/assets`)}/timeline.js"></script>
</body></html>`;
}

/** Every error code the guide knows: what it means and what to do (the failed list and the timeline link here). */
export function errorsPage(options: Pick<PageOptions, 'base' | 'environment'>): string {
  const rows = allErrorGuideEntries()
    .map(
      (e) =>
        `<tr><td>${e.codes.map((c) => `<code id="${escapeHtml(errorAnchor(c))}">${escapeHtml(c)}</code>`).join(' ')}</td>
<td>${escapeHtml(e.title)}</td><td>${e.retried ? 'yes' : 'no'}</td><td>${escapeHtml(e.action)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>notice-service · error codes</title>
<style>${STYLE}</style></head>
<body>
${header(options, 'Error codes')}
<main><p class="muted">What a row's error code means and what to do (the same table is in docs/runbook.md, "Error codes").</p>
<table><thead><tr><th>code</th><th>what it means</th><th>retried by itself</th><th>what to do</th></tr></thead><tbody>
${rows}
</tbody></table></main></body></html>`;
}
