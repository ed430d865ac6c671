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
    `<label>${label}<select name="${name}">${any ? `<option value="">${any}</option>` : ''}${values.map((v) => `<option value="${escapeHtml(v)}">${escapeHtml(v)}</option>`).join('')}</select></label>`;
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
 <table id="groups" aria-label="by channel and error code"><thead><tr><th>rows</th><th>channel</th><th>code</th><th>last</th><th>what it means</th><th>what to do</th></tr></thead><tbody></tbody></table>
 <p><button id="requeue" hidden></button> <span id="requeue-status" role="status"></span></p>
 <h2>Newest first</h2>
 <div style="overflow-x:auto"><table id="rows"><thead><tr><th>updated</th><th>channel</th><th>app</th><th>event id</th><th>user</th><th>kind</th><th>attempts</th><th>code</th><th>error</th></tr></thead><tbody></tbody></table></div>
 <p><a id="older" hidden>older ›</a></p>
</main>
<script>
const CONFIG = ${config};
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
if (!params.get('status')) params.set('status', 'failed');
if (!params.get('since')) params.set('since', '1h');
for (const [k, v] of params) { const field = document.querySelector('form.filters [name="' + CSS.escape(k) + '"]'); if (field) field.value = v; }
const cell = (row, text) => { const td = row.insertCell(); td.textContent = text == null ? '' : String(text); return td; };
async function load() {
  const answer = await fetch(CONFIG.api + '?' + params.toString(), { credentials: 'same-origin' });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || answer.statusText);
  const total = body.groups.reduce((n, g) => n + g.count, 0);
  $('summary').textContent = total + (body.capped ? '+' : '') + ' ' + body.status + ' row' + (total === 1 ? '' : 's') + ' since ' + params.get('since') + ', times in ' + body.zone + '.';
  const groups = $('groups').tBodies[0];
  for (const g of body.groups) {
    const tr = groups.insertRow();
    cell(tr, g.count).className = 'count';
    cell(tr, g.channel);
    const code = tr.insertCell();
    const a = document.createElement('a');
    a.textContent = g.code == null ? '(no code)' : g.code;
    const only = new URLSearchParams(params); only.set('channel', g.channel); if (g.code != null) only.set('code', g.code); only.delete('after');
    a.href = '?' + only.toString();
    code.append(a);
    cell(tr, g.latest); cell(tr, g.meaning); cell(tr, g.action);
  }
  const rows = $('rows').tBodies[0];
  for (const r of body.rows) {
    const tr = rows.insertRow();
    for (const v of [r.updated, r.channel, r.app, r.event_id, r.user_id, r.kind, r.attempts, r.code, r.error]) cell(tr, v);
  }
  if (body.next) { const older = new URLSearchParams(params); older.set('after', body.next); $('older').href = '?' + older.toString(); $('older').hidden = false; }
  const button = $('requeue');
  if (body.requeue && total > 0 && !body.capped && !CONFIG.readOnly) {
    button.textContent = 'Requeue these ' + total;
    button.hidden = false;
    button.onclick = async () => {
      if (!confirm('Requeue ' + total + ' failed row' + (total === 1 ? '' : 's') + ' matching this filter? (the same as: ' + body.requeue + ')')) return;
      button.disabled = true;
      const filter = Object.fromEntries([...params].filter(([k]) => k !== 'after'));
      const done = await fetch(CONFIG.api + '/requeue', { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...filter, expected: total }) });
      const result = await done.json();
      $('requeue-status').textContent = done.ok ? 'requeued ' + result.requeued + ' of ' + result.matched + (result.skipped ? ', ' + result.skipped + ' skipped' : '') : 'nothing changed: ' + result.error;
      button.disabled = false;
    };
  }
}
load().catch((err) => { $('summary').textContent = 'failures unavailable: ' + err.message; });
</script>
</body></html>`;
}
