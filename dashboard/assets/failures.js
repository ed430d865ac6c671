// The failures page's script (dashboard/failures-page.ts serves the page; visible.js comes first).
const CONFIG = JSON.parse(document.getElementById('page-config').textContent);
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
if (!params.get('status')) params.set('status', 'failed');
if (!params.get('since')) params.set('since', '1h');
for (const [k, v] of params) {
  const field = document.querySelector(`form.filters [name="${CSS.escape(k)}"]`);
  if (field) field.value = v;
}
const cell = (row, text) => {
  const td = row.insertCell();
  td.textContent = text == null ? '' : String(text);
  return td;
};
async function load() {
  const answer = await fetch(`${CONFIG.api}?${params.toString()}`, { credentials: 'same-origin' });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error || answer.statusText);
  const total = body.groups.reduce((n, g) => n + g.count, 0);
  $('summary').textContent =
    total +
    (body.capped ? '+' : '') +
    ' ' +
    body.status +
    ' row' +
    (total === 1 ? '' : 's') +
    ' since ' +
    params.get('since') +
    ', times in ' +
    body.zone +
    '.';
  const groups = $('groups').tBodies[0];
  for (const g of body.groups) {
    const tr = groups.insertRow();
    cell(tr, g.count).className = 'count';
    cell(tr, g.channel);
    const code = tr.insertCell();
    const a = document.createElement('a');
    a.textContent = g.code == null ? '(no code)' : g.code;
    const only = new URLSearchParams(params);
    only.set('channel', g.channel);
    if (g.code != null) only.set('code', g.code);
    only.delete('after');
    a.href = `?${only.toString()}`;
    code.append(a);
    cell(tr, g.latest);
    cell(tr, g.meaning);
    cell(tr, g.action);
  }
  const rows = $('rows').tBodies[0];
  for (const r of body.rows) {
    const tr = rows.insertRow();
    for (const v of [r.updated, r.channel, r.app, r.event_id, r.user_id, r.kind, r.attempts, r.code, r.error]) cell(tr, v);
  }
  if (body.next) {
    const older = new URLSearchParams(params);
    older.set('after', body.next);
    $('older').href = `?${older.toString()}`;
    $('older').hidden = false;
  }
  const button = $('requeue');
  if (body.requeue && total > 0 && !body.capped && !CONFIG.readOnly) {
    button.textContent = `Requeue these ${total}`;
    button.hidden = false;
    button.onclick = async () => {
      if (!confirm(`Requeue ${total} failed row${total === 1 ? '' : 's'} matching this filter? (the same as: ${body.requeue})`)) return;
      button.disabled = true;
      const filter = Object.fromEntries([...params].filter(([k]) => k !== 'after'));
      const done = await fetch(`${CONFIG.api}/requeue`, {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...filter, expected: total }),
      });
      const result = await done.json();
      $('requeue-status').textContent = done.ok
        ? `requeued ${result.requeued} of ${result.matched}${result.skipped ? `, ${result.skipped} skipped` : ''}`
        : `nothing changed: ${result.error}`;
      button.disabled = false;
    };
  }
}
load().catch((err) => {
  $('summary').textContent = `failures unavailable: ${err.message}`;
});
