/**
 * The ledger page: the last hours at a glance, the failed list (newest first, paged), requeue of selected rows; finding
 * an event or a user goes to the Timeline page.
 * Static HTML plus a little script against the JSON API; every value is inserted as text, never as HTML.
 */
export function noticesPage(options: {
  timelinePath: string;
  errorsPath: string;
  chartsPath: string;
  apiPath: string;
  rejectsPath: string;
  queuesPath: string;
  environment: { label: string; color: string };
  readOnly: boolean;
  channels: readonly string[];
  statuses: ReadonlyArray<{ status: string; meaning: string; alarming: boolean }>;
  zone: string;
}): string {
  const config = JSON.stringify({
    api: options.apiPath,
    rejects: options.rejectsPath,
    readOnly: options.readOnly,
    channels: options.channels,
    statuses: options.statuses,
    zone: options.zone,
    timeline: options.timelinePath,
    errors: options.errorsPath,
  }).replace(/</g, '\\u003c');
  const env = escapeHtml(options.environment.label);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>notice-service · notices</title>
<style>
 body{font-family:system-ui,sans-serif;margin:0;color:#1f2933}
 header{display:flex;gap:16px;align-items:center;padding:12px 20px;background:#102a43;color:#fff}
 header a{color:#bcccdc} .env{background:${escapeHtml(options.environment.color)};padding:2px 8px;border-radius:4px;font-size:12px}
 main{padding:16px 20px} form{display:flex;gap:8px;margin-bottom:16px} input,select{padding:6px}
 table{border-collapse:collapse;width:100%;font-size:13px} th,td{border-bottom:1px solid #d9e2ec;padding:6px;text-align:left;vertical-align:top}
 td.err{color:#b00020;max-width:420px;word-break:break-word} .muted{color:#829ab1} button{padding:6px 12px}
 pre{white-space:pre-wrap;word-break:break-all;max-width:520px;margin:0;font-size:12px}
 ol.timeline{margin:4px 0 8px;padding-left:20px;font-size:13px} ol.timeline li{margin:2px 0}
 #glance{display:flex;flex-wrap:wrap;gap:12px;margin-bottom:16px} .tile{border:1px solid #d9e2ec;border-radius:6px;padding:8px 12px;min-width:110px}
 #charts{display:flex;flex-wrap:wrap;gap:8px;margin-bottom:16px} #charts img{max-width:100%;height:auto;border:1px solid #d9e2ec;border-radius:6px}
 .scroll{overflow-x:auto;max-width:100%} header{flex-wrap:wrap} form{flex-wrap:wrap} input{max-width:100%}
 .tile b{display:block;font-size:20px} .tile span{color:#627d98;font-size:12px} .tile.bad b{color:#b00020}
</style></head>
<body>
<header><strong>notice-service</strong><span class="env" id="env">${env}</span><a href="${escapeHtml(options.timelinePath)}">Timeline</a><a href="${escapeHtml(options.timelinePath.replace(/\/timeline$/, '/failures'))}">Failures</a><span>Notices</span><a href="${escapeHtml(options.queuesPath)}">Queues (bull-board)</a><a href="${escapeHtml(options.errorsPath)}">Error codes</a>${options.readOnly ? '<span class="env" style="background:#7b8794">read-only</span>' : ''}</header>
<main>
 <section id="glance" aria-label="last hour at a glance"></section>
 <section id="charts" aria-label="the last hours">${[...options.channels.map((c) => `${options.chartsPath}/outcomes/${encodeURIComponent(c)}.svg`), `${options.chartsPath}/queues.svg`, `${options.chartsPath}/pending-age.svg`].map((src) => `<img src="${escapeHtml(src)}" alt="chart" loading="lazy">`).join('')}</section>
 <form id="search" method="get" action="${escapeHtml(options.timelinePath)}" aria-label="find on the timeline"><input name="event_id" size="40" placeholder="event id: tx_xxx:WalletBalanceChanged:10001:COIN" aria-label="event id">
  <input name="user_id" size="12" placeholder="or user id" aria-label="user id"><button type="submit">Find on the timeline</button></form>
 <h2>Failed deliveries <span class="muted" id="total"></span></h2>
 <div><select id="failed-channel" aria-label="channel"><option value="">every channel</option></select> <button id="requeue" ${options.readOnly ? 'disabled' : ''}>Requeue selected</button> <span id="status" role="status"></span></div>
 <div class="scroll"> <table id="failed"><thead><tr><th></th><th>updated</th><th>source</th><th>channel</th><th>app</th><th>event_id</th><th>user</th><th>type</th><th>attempts</th><th>code</th><th>error</th></tr></thead><tbody></tbody></table></div>
 <div><button id="prev">‹ newer</button> <span id="page"></span> <button id="next">older ›</button></div>
 <h2>Rejected MQ messages <span class="muted" id="rejects-total"></span></h2>
 <form id="rejects-filter"><input id="rejects-reason" size="32" placeholder="reason contains…" aria-label="reason contains"><select id="rejects-since" aria-label="since"><option value="">any time</option><option value="1h">last hour</option><option value="1d">last day</option><option value="7d">last week</option></select><button type="submit">Filter</button>
  <button type="button" id="rejects-requeue" ${options.readOnly ? 'disabled' : ''}>Requeue selected</button> <span id="rejects-status" role="status"></span></form>
 <div class="scroll"> <table id="rejects"><thead><tr><th></th><th>received</th><th>source</th><th>message id</th><th>tag</th><th>attempt</th><th>bytes</th><th>reason</th><th></th></tr></thead><tbody></tbody></table></div>
 <pre id="rejects-body" aria-label="message body"></pre>
 <h2>Operator actions <span class="muted">(newest 20)</span></h2>
 <div class="scroll"> <table id="audit"><thead><tr><th>when</th><th>who</th><th>via</th><th>action</th><th>matched</th><th>changed</th><th>detail</th></tr></thead><tbody></tbody></table></div>
</main>
<script>
const CONFIG = ${config};
let page = 1, pageSize = 50, total = 0, current = [];
const $ = (id) => document.getElementById(id);
${VISIBLE_SCRIPT}
const td = (text, cls) => { const c = document.createElement('td'); c.textContent = text == null ? '' : visible(text); if (cls) c.className = cls; return c; };
// One clock: display.time_zone, labelled, as on every page and in the CLI.
const zoneFormat = new Intl.DateTimeFormat('en-CA', { timeZone: CONFIG.zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
const when = (ms) => { if (!ms) return ''; const p = Object.fromEntries(zoneFormat.formatToParts(new Date(ms)).map((x) => [x.type, x.value])); return p.year + '-' + p.month + '-' + p.day + ' ' + p.hour + ':' + p.minute + ':' + p.second + ' ' + CONFIG.zone; };
const link = (text, href) => { const c = document.createElement('td'); if (text == null || text === '') return c; const a = document.createElement('a'); a.textContent = visible(text); a.href = href; c.append(a); return c; };
async function api(path, init) { const r = await fetch(CONFIG.api + path, init); if (!r.ok) throw new Error(r.status + ' ' + (await r.text())); return r.json(); }
async function loadFailed() {
  const channel = $('failed-channel').value;
  const data = await api('/failed?page=' + page + '&page_size=' + pageSize + (channel ? '&channel=' + encodeURIComponent(channel) : ''));
  total = data.total; current = data.rows;
  $('total').textContent = '(' + total + ')'; $('page').textContent = 'page ' + page + ' of ' + Math.max(1, Math.ceil(total / pageSize));
  const body = $('failed').querySelector('tbody'); body.replaceChildren();
  data.rows.forEach((row, i) => {
    const tr = document.createElement('tr'); tr.dataset.eventId = row.source_event_id;
    const box = document.createElement('td'); const cb = document.createElement('input'); cb.type = 'checkbox'; cb.dataset.index = i; cb.setAttribute('aria-label', 'select ' + row.source_event_id); box.append(cb);
    tr.append(box, td(when(row.updated_at_ms)), td(row.source_name), td(row.channel), td(row.app_code), link(row.source_event_id, CONFIG.timeline + '?' + new URLSearchParams({ user_id: row.user_id, event_id: row.source_event_id })), link(row.user_id, CONFIG.timeline + '?' + new URLSearchParams({ user_id: row.user_id })), td(row.event_type), td(row.attempt_count), link(row.last_error_code, CONFIG.errors + '#' + (row.error_anchor || '')), td(row.last_error, 'err'));
    body.append(tr);
  });
}
for (const c of CONFIG.channels) { const o = document.createElement('option'); o.value = c; o.textContent = c; $('failed-channel').append(o); }
$('failed-channel').addEventListener('change', () => { page = 1; loadFailed(); });
$('requeue').addEventListener('click', async () => {
  const keys = [...document.querySelectorAll('#failed input:checked')].map((cb) => current[cb.dataset.index]).map((r) => ({ source_name: r.source_name, app_code: r.app_code, source_event_id: r.source_event_id, channel: r.channel }));
  if (!keys.length) { $('status').textContent = 'select rows first'; return; }
  if (!confirm('Requeue ' + keys.length + ' failed row' + (keys.length === 1 ? '' : 's') + '? ' + keys.map((k) => k.source_event_id).slice(0, 5).join(', ') + (keys.length > 5 ? ', …' : ''))) { $('status').textContent = 'nothing changed'; return; }
  try {
    const result = await api('/requeue', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ keys }) });
    loadAudit().catch(() => undefined);
    $('status').textContent = visible('requeued ' + result.requeued.length + (result.skipped.length ? ', skipped ' + result.skipped.map((s) => s.source_event_id + ': ' + s.reason).join('; ') : ''));
  } catch (err) { $('status').textContent = 'requeue failed: ' + err.message; }
  await loadFailed();
});
$('prev').addEventListener('click', () => { if (page > 1) { page--; loadFailed(); } });
$('next').addEventListener('click', () => { if (page * pageSize < total) { page++; loadFailed(); } });
function tile(label, value, bad) { const d = document.createElement('div'); d.className = 'tile' + (bad ? ' bad' : ''); const b = document.createElement('b'); b.textContent = value; const s = document.createElement('span'); s.textContent = label; d.append(b, s); return d; }
function age(ms) { if (ms == null) return 'none'; if (ms < 1000) return ms + ' ms'; if (ms < 120000) return Math.round(ms / 1000) + ' s'; return Math.round(ms / 60000) + ' min'; }
async function loadGlance() {
  const g = await api('/summary');
  const tiles = [];
  const totals = {};
  for (const r of g.by_status) { const k = r.status + ' · ' + r.channel; totals[k] = (totals[k] || 0) + r.count; if (r.capped) totals[k + '+'] = true; }
  // The ledger's status table, in its order; an alarming status (failed) shows red when it has rows.
  for (const s of CONFIG.statuses) {
    for (const k of Object.keys(totals).filter((k) => !k.endsWith('+') && k.split(' · ')[0] === s.status)) { const t = tile(k + ' (1h)', totals[k] + (totals[k + '+'] ? '+' : ''), s.alarming && totals[k] > 0); t.title = s.meaning; tiles.push(t); }
  }
  tiles.push(tile('oldest pending', age(g.oldest_pending_age_ms), g.oldest_pending_age_ms > 60000));
  // One send-rate tile per channel, against its provider's quota.
  for (const c of g.channels) tiles.push(tile('sent/s · limit · ' + c.channel, c.send_rate_per_second + ' · ' + (c.rate_limit_per_second || 'off'), false));
  $('glance').replaceChildren(...tiles);
}
async function loadAudit() {
  const data = await api('/audit');
  const body = $('audit').querySelector('tbody'); body.replaceChildren();
  for (const a of data.actions) { const tr = document.createElement('tr'); tr.append(td(when(a.at_ms)), td(a.actor), td(a.via), td(a.action), td(a.matched), td(a.affected), td(JSON.stringify(a.detail))); body.append(tr); }
}
async function rejectsApi(path, init) { const r = await fetch(CONFIG.rejects + path, init); if (!r.ok) throw new Error(r.status + ' ' + (await r.text())); return r.json(); }
async function loadRejects() {
  const q = new URLSearchParams({ reason: $('rejects-reason').value, since: $('rejects-since').value });
  const data = await rejectsApi('?' + q);
  $('rejects-total').textContent = '(' + data.total + ')';
  const body = $('rejects').querySelector('tbody'); body.replaceChildren();
  for (const m of data.rows) {
    const tr = document.createElement('tr'); tr.dataset.rejectId = m.id;
    const box = document.createElement('td'); const cb = document.createElement('input'); cb.type = 'checkbox'; cb.value = m.id; cb.setAttribute('aria-label', 'select reject ' + m.id); box.append(cb);
    const view = document.createElement('button'); view.type = 'button'; view.textContent = 'view';
    view.addEventListener('click', async () => { const d = await rejectsApi('/' + m.id); $('rejects-body').textContent = (d.body.utf8 ? d.body.text : '(not UTF-8)') + '\\n\\nhex' + (d.body.truncated ? ' (first 4 KiB)' : '') + ': ' + d.body.hex; });
    const v = document.createElement('td'); v.append(view);
    tr.append(box, td(when(m.created_at_ms)), td(m.source_name), td(m.message_id), td(m.tag), td(m.delivery_attempt), td(m.body_bytes), td(m.reason, 'err'), v);
    body.append(tr);
  }
}
$('rejects-filter').addEventListener('submit', (e) => { e.preventDefault(); loadRejects().catch((err) => { $('rejects-status').textContent = err.message; }); });
$('rejects-requeue').addEventListener('click', async () => {
  const ids = [...document.querySelectorAll('#rejects input:checked')].map((cb) => Number(cb.value));
  if (!ids.length) { $('rejects-status').textContent = 'select messages first'; return; }
  try {
    const r = await rejectsApi('/requeue', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ids }) });
    $('rejects-status').textContent = 'requeued ' + r.requeued.length + (r.still_rejected.length ? ', still rejected: ' + r.still_rejected.map((s) => s.id + ': ' + s.reason).join('; ') : '');
  } catch (err) { $('rejects-status').textContent = 'requeue failed: ' + err.message; }
  await loadRejects(); await loadAudit();
});
loadRejects().catch(() => undefined);
loadAudit().catch(() => undefined);
loadGlance().catch((err) => { $('glance').textContent = 'summary unavailable: ' + err.message; });
setInterval(() => loadGlance().catch(() => undefined), 10000);
loadFailed().catch((err) => { $('status').textContent = err.message; });
</script>
</body></html>`;
}

/**
 * In-page helper of every dashboard page: controls and bidi overrides are shown as [U+XXXX], never obeyed (an event
 * id with U+202E must not reverse a row).
 */
export const VISIBLE_SCRIPT =
  "const visible = (text) => String(text).replace(/[\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\u061c\\u200b-\\u200f\\u202a-\\u202e\\u2060-\\u2069\\ufeff]/g, (c) => '[U+' + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') + ']');";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
