import { escapeHtml } from './notices-page.ts';
import { header, STYLE } from './timeline-page.ts';

/**
 * "What failed in the last hour, and why", across every user: the filters in the URL (a plain GET form), the rows
 * grouped by channel and error code with the error guide's words, the newest rows paged, and "Requeue these" acting
 * on exactly the filter shown after the operator confirmed the count. Every value is inserted as text.
 */
export function failuresPage(options: {
  base: string;
  environment: { label: string; color: string };
  channels: readonly string[];
  statuses: readonly string[];
  kinds: readonly string[];
  sources: readonly string[];
  zone: string;
  readOnly: boolean;
}): string {
  const config = JSON.stringify({ api: `${options.base}/api/failures`, errors: `${options.base}/errors`, readOnly: options.readOnly }).replace(/</g, '\\u003c');
  const select = (name: string, label: string, values: readonly string[], any = 'any') =>
    `<label>${label}<select name="${name}">${any ? `<option value="">${any}</option>` : ''}${values
      .map((v) => `<option ` + `value="${escapeHtml(v)}">${escapeHtml(v)}</option>`)
      .join('')}</select></label>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>notice-service · failures</title>
<style>${STYLE} .count{font-variant-numeric:tabular-nums;text-align:right;font-weight:600}</style></head>
<body>
${header(options, 'Failures')}
<main>
 <form class="filters" method="get" aria-label="filters">
  ${select('status', 'status', options.statuses, '')}
  <label>since<input name="since" placeholder="1h or 2026-12-01T00:00Z"></label>
  <label>until<input name="until" placeholder="10m or an ISO time"></label>
  ${select('channel', 'channel', options.channels)}
  ${select('kind', 'kind', options.kinds)}
  ${select('source', 'source', options.sources)}
  <label>app<input name="app" placeholder="lalu"></label>
  <label>error code<input name="code" placeholder="90012"></label>
  <button type="submit">Show</button>
 </form>
 <p class="muted" id="summary">Times in ${escapeHtml(options.zone)}.</p>
 <table id="groups" aria-label="by channel and error code"><thead><tr><th>rows</th><th>channel</th><th>code</th><th>last</th><th>what it means</th>
<th>what to do</th></tr></thead><tbody></tbody></table>
 <p><button id="requeue" hidden></button> <span id="requeue-status" role="status"></span></p>
 <h2>Newest first</h2>
 <div style="overflow-x:auto"><table id="rows"><thead><tr><th>updated</th><th>channel</th><th>app</th><th>event id</th><th>user</th><th>kind</th>
<th>attempts</th><th>code</th><th>error</th></tr></thead><tbody></tbody></table></div>
 <p><a id="older" hidden>older ›</a></p>
</main>
<script type="application/json" id="page-config">${config}</script>
<script src="${escapeHtml(`${options.base}/assets`)}/visible.js"></script>
<script src="${escapeHtml(`${options.base}/assets`)}/failures.js"></script>
</body></html>`;
}
