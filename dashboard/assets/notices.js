// The notices page's script (dashboard/notices-page.ts serves the page; visible.js comes first).
const CONFIG = JSON.parse(document.getElementById('page-config').textContent);
let page = 1,
  pageSize = 50,
  total = 0,
  current = [];
const $ = (id) => document.getElementById(id);

const td = (text, cls) => {
  const c = document.createElement('td');
  c.textContent = text == null ? '' : visible(text);
  if (cls) c.className = cls;
  return c;
};
// One clock: display.time_zone, labelled, as on every page and in the CLI.
const zoneFormat = new Intl.DateTimeFormat('en-CA', {
  timeZone: CONFIG.zone,
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});
const when = (ms) => {
  if (!ms) return '';
  const p = Object.fromEntries(zoneFormat.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${CONFIG.zone}`;
};
const link = (text, href) => {
  const c = document.createElement('td');
  if (text == null || text === '') return c;
  const a = document.createElement('a');
  a.textContent = visible(text);
  a.href = href;
  c.append(a);
  return c;
};
async function api(path, init) {
  const r = await fetch(CONFIG.api + path, init);
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  return r.json();
}
async function loadFailed() {
  const channel = $('failed-channel').value;
  const data = await api(`/failed?page=${page}&page_size=${pageSize}${channel ? `&channel=${encodeURIComponent(channel)}` : ''}`);
  total = data.total;
  current = data.rows;
  $('total').textContent = `(${total})`;
  $('page').textContent = `page ${page} of ${Math.max(1, Math.ceil(total / pageSize))}`;
  const body = $('failed').querySelector('tbody');
  body.replaceChildren();
  data.rows.forEach((row, i) => {
    const tr = document.createElement('tr');
    tr.dataset.eventId = row.source_event_id;
    const box = document.createElement('td');
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    cb.dataset.index = i;
    cb.setAttribute('aria-label', `select ${row.source_event_id}`);
    box.append(cb);
    tr.append(
      box,
      td(when(row.updated_at_ms)),
      td(row.source_name),
      td(row.channel),
      td(row.app_code),
      link(row.source_event_id, `${CONFIG.timeline}?${new URLSearchParams({ user_id: row.user_id, event_id: row.source_event_id })}`),
      link(row.user_id, `${CONFIG.timeline}?${new URLSearchParams({ user_id: row.user_id })}`),
      td(row.event_type),
      td(row.attempt_count),
      link(row.last_error_code, `${CONFIG.errors}#${row.error_anchor || ''}`),
      td(row.last_error, 'err'),
    );
    body.append(tr);
  });
}
for (const c of CONFIG.channels) {
  const o = document.createElement('option');
  o.value = c;
  o.textContent = c;
  $('failed-channel').append(o);
}
$('failed-channel').addEventListener('change', () => {
  page = 1;
  loadFailed();
});
$('requeue').addEventListener('click', async () => {
  const keys = [...document.querySelectorAll('#failed input:checked')]
    .map((cb) => current[cb.dataset.index])
    .map((r) => ({ source_name: r.source_name, app_code: r.app_code, source_event_id: r.source_event_id, channel: r.channel }));
  if (!keys.length) {
    $('status').textContent = 'select rows first';
    return;
  }
  if (
    !confirm(
      'Requeue ' +
        keys.length +
        ' failed row' +
        (keys.length === 1 ? '' : 's') +
        '? ' +
        keys
          .map((k) => k.source_event_id)
          .slice(0, 5)
          .join(', ') +
        (keys.length > 5 ? ', …' : ''),
    )
  ) {
    $('status').textContent = 'nothing changed';
    return;
  }
  try {
    const result = await api('/requeue', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ keys }) });
    loadAudit().catch(() => undefined);
    $('status').textContent = visible(
      'requeued ' +
        result.requeued.length +
        (result.skipped.length ? `, skipped ${result.skipped.map((s) => `${s.source_event_id}: ${s.reason}`).join('; ')}` : ''),
    );
  } catch (err) {
    $('status').textContent = `requeue failed: ${err.message}`;
  }
  await loadFailed();
});
$('prev').addEventListener('click', () => {
  if (page > 1) {
    page--;
    loadFailed();
  }
});
$('next').addEventListener('click', () => {
  if (page * pageSize < total) {
    page++;
    loadFailed();
  }
});
function tile(label, value, bad) {
  const d = document.createElement('div');
  d.className = `tile${bad ? ' bad' : ''}`;
  const b = document.createElement('b');
  b.textContent = value;
  const s = document.createElement('span');
  s.textContent = label;
  d.append(b, s);
  return d;
}
function age(ms) {
  if (ms == null) return 'none';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120000) return `${Math.round(ms / 1000)} s`;
  return `${Math.round(ms / 60000)} min`;
}
async function loadGlance() {
  const g = await api('/summary');
  const tiles = [];
  const totals = {};
  for (const r of g.by_status) {
    const k = `${r.status} · ${r.channel}`;
    totals[k] = (totals[k] || 0) + r.count;
    if (r.capped) totals[`${k}+`] = true;
  }
  // The ledger's status table, in its order; an alarming status (failed) shows red when it has rows.
  for (const s of CONFIG.statuses) {
    for (const k of Object.keys(totals).filter((k) => !k.endsWith('+') && k.split(' · ')[0] === s.status)) {
      const t = tile(`${k} (1h)`, totals[k] + (totals[`${k}+`] ? '+' : ''), s.alarming && totals[k] > 0);
      t.title = s.meaning;
      tiles.push(t);
    }
  }
  tiles.push(tile('oldest pending', age(g.oldest_pending_age_ms), g.oldest_pending_age_ms > 60000));
  // One send-rate tile per channel, against its provider's quota.
  for (const c of g.channels) tiles.push(tile(`sent/s · limit · ${c.channel}`, `${c.send_rate_per_second} · ${c.rate_limit_per_second || 'off'}`, false));
  $('glance').replaceChildren(...tiles);
}
async function loadAudit() {
  const data = await api('/audit');
  const body = $('audit').querySelector('tbody');
  body.replaceChildren();
  for (const a of data.actions) {
    const tr = document.createElement('tr');
    tr.append(td(when(a.at_ms)), td(a.actor), td(a.via), td(a.action), td(a.matched), td(a.affected), td(JSON.stringify(a.detail)));
    body.append(tr);
  }
}
async function rejectsApi(path, init) {
  const r = await fetch(CONFIG.rejects + path, init);
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  return r.json();
}
async function loadRejects() {
  const q = new URLSearchParams({ reason: $('rejects-reason').value, since: $('rejects-since').value });
  const data = await rejectsApi(`?${q}`);
  $('rejects-total').textContent = `(${data.total})`;
  const body = $('rejects').querySelector('tbody');
  body.replaceChildren();
  for (const m of data.rows) {
    const tr = document.createElement('tr');
    tr.dataset.rejectId = m.id;
    const box = document.createElement('td');
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    cb.value = m.id;
    cb.setAttribute('aria-label', `select reject ${m.id}`);
    box.append(cb);
    const view = document.createElement('button');
    view.type = 'button';
    view.textContent = 'view';
    view.addEventListener('click', async () => {
      const d = await rejectsApi(`/${m.id}`);
      $('rejects-body').textContent = `${d.body.utf8 ? d.body.text : '(not UTF-8)'}\n\nhex${d.body.truncated ? ' (first 4 KiB)' : ''}: ${d.body.hex}`;
    });
    const v = document.createElement('td');
    v.append(view);
    tr.append(box, td(when(m.created_at_ms)), td(m.source_name), td(m.message_id), td(m.tag), td(m.delivery_attempt), td(m.body_bytes), td(m.reason, 'err'), v);
    body.append(tr);
  }
}
$('rejects-filter').addEventListener('submit', (e) => {
  e.preventDefault();
  loadRejects().catch((err) => {
    $('rejects-status').textContent = err.message;
  });
});
$('rejects-requeue').addEventListener('click', async () => {
  const ids = [...document.querySelectorAll('#rejects input:checked')].map((cb) => Number(cb.value));
  if (!ids.length) {
    $('rejects-status').textContent = 'select messages first';
    return;
  }
  try {
    const r = await rejectsApi('/requeue', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ids }) });
    $('rejects-status').textContent =
      `requeued ${r.requeued.length}${r.still_rejected.length ? `, still rejected: ${r.still_rejected.map((s) => `${s.id}: ${s.reason}`).join('; ')}` : ''}`;
  } catch (err) {
    $('rejects-status').textContent = `requeue failed: ${err.message}`;
  }
  await loadRejects();
  await loadAudit();
});
loadRejects().catch(() => undefined);
loadAudit().catch(() => undefined);
loadGlance().catch((err) => {
  $('glance').textContent = `summary unavailable: ${err.message}`;
});
setInterval(() => loadGlance().catch(() => undefined), 10000);
loadFailed().catch((err) => {
  $('status').textContent = err.message;
});
