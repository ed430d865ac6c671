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
  /** Where the page's scripts are served (dashboard/assets/). */
  assetsPath: string;
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
  const charts = [
    ...options.channels.map((c) => `${options.chartsPath}/outcomes/${encodeURIComponent(c)}.svg`),
    `${options.chartsPath}/queues.svg`,
    `${options.chartsPath}/pending-age.svg`,
  ]
    .map((src) => `<img src="${escapeHtml(src)}" alt="chart" loading="lazy">`)
    .join('');
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
<header><strong>notice-service</strong><span class="env" id="env">${env}</span><a href="${escapeHtml(options.timelinePath)}">Timeline</a>
<a href="${escapeHtml(options.timelinePath.replace(/\/timeline$/, '/failures'))}">Failures</a><span>Notices</span>
<a href="${escapeHtml(options.queuesPath)}">Queues (bull-board)</a>
<a href="${escapeHtml(options.errorsPath)}">Error codes</a>${options.readOnly ? '<span class="env" style="background:#7b8794">read-only</span>' : ''}</header>
<main>
 <section id="glance" aria-label="last hour at a glance"></section>
 <section id="charts" aria-label="the last hours">${charts}</section>
 <form id="search" method="get" action="${escapeHtml(options.timelinePath)}" aria-label="find on the timeline">
<input name="event_id" size="40" placeholder="event id: tx_xxx:WalletBalanceChanged:10001:COIN" aria-label="event id">
  <input name="user_id" size="12" placeholder="or user id" aria-label="user id"><button type="submit">Find on the timeline</button></form>
 <h2>Failed deliveries <span class="muted" id="total"></span></h2>
 <div><select id="failed-channel" aria-label="channel"><option value="">every channel</option>
</select> <button id="requeue" ${options.readOnly ? 'disabled' : ''}>Requeue selected</button> <span id="status" role="status"></span></div>
 <div class="scroll"> <table id="failed"><thead><tr><th></th><th>updated</th><th>source</th><th>channel</th><th>app</th><th>event_id</th><th>user</th>
<th>type</th><th>attempts</th><th>code</th><th>error</th></tr></thead><tbody></tbody></table></div>
 <div><button id="prev">‹ newer</button> <span id="page"></span> <button id="next">older ›</button></div>
 <h2>Rejected MQ messages <span class="muted" id="rejects-total"></span></h2>
 <form id="rejects-filter"><input id="rejects-reason" size="32" placeholder="reason contains…" aria-label="reason contains">
<select id="rejects-since" aria-label="since"><option value="">any time</option><option value="1h">last hour</option>
<option value="1d">last day</option><option value="7d">last week</option></select><button type="submit">Filter</button>
  <button type="button" id="rejects-requeue" ${options.readOnly ? 'disabled' : ''}>Requeue selected</button> <span id="rejects-status" role="status">
</span></form>
 <div class="scroll"> <table id="rejects"><thead><tr><th></th><th>received</th><th>source</th><th>message id</th><th>tag</th><th>attempt</th>
<th>bytes</th><th>reason</th><th></th></tr></thead><tbody></tbody></table></div>
 <pre id="rejects-body" aria-label="message body"></pre>
 <h2>Operator actions <span class="muted">(newest 20)</span></h2>
 <div class="scroll"> <table id="audit"><thead><tr><th>when</th><th>who</th><th>via</th><th>action</th><th>matched</th><th>changed</th><th>detail</th>
</tr></thead><tbody></tbody></table></div>
</main>
<script type="application/json" id="page-config">${config}</script>
<script src="${escapeHtml(options.assetsPath)}/visible.js"></script>
<script src="${escapeHtml(options.assetsPath)}/notices.js"></script>
</body></html>`;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
