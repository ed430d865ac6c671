// The timeline page's script (dashboard/timeline-page.ts serves the page; visible.js comes first).
const CONFIG = JSON.parse(document.getElementById('page-config').textContent);
const $ = (id) => document.getElementById(id);

const el = (tag, text, cls) => {
  const e = document.createElement(tag);
  if (text != null) e.textContent = visible(text);
  if (cls) e.className = cls;
  return e;
};
const params = new URLSearchParams(location.search);
for (const [k, v] of params) {
  const f = document.querySelector(`form.filters [name="${CSS.escape(k)}"]`);
  if (f) f.value = v;
}
function render(fact) {
  const li = el('li', null, 'fact');
  li.dataset.eventId = fact.event_id;
  const line = el('button', null, 'line');
  line.type = 'button';
  line.setAttribute('aria-expanded', 'false');
  line.append(
    el('span', fact.at, 'when'),
    el('span', `${fact.event_type} · ${fact.notice_kind}`, 'what'),
    el('span', `user ${fact.user_id}`, 'muted'),
    el('span', fact.event_id, 'id'),
  );
  const badges = el('div', null, 'badges');
  for (const c of fact.channels) {
    const b = el('span', `${c.channel}: ${c.status.replace('_', ' ')}${c.error_code ? ` ${c.error_code}` : ''}`, `badge ${c.status}`);
    b.title = c.reason;
    badges.append(b);
  }
  line.append(badges);
  const detail = el('div', null, 'detail');
  detail.hidden = true;
  for (const c of fact.channels) {
    detail.append(el('h4', c.channel));
    const reason = el('p', c.reason, 'reason');
    if (c.error_anchor) {
      reason.append(' ');
      const a = el('a', `what ${c.error_code} means`);
      a.href = `${CONFIG.errors}#${c.error_anchor}`;
      reason.append(a);
    }
    detail.append(reason);
    if (c.error) detail.append(el('p', `provider said: ${c.error}`, 'muted'));
    if (c.what_to_do) detail.append(el('p', `what to do: ${c.what_to_do}`, 'todo'));
    const steps = el('ol', null, 'steps');
    for (const s of c.steps)
      steps.append(
        el(
          'li',
          s.at_ms ? `${s.at}  ${s.event}${s.actor ? ` by ${s.actor}` : ''}${s.error_code ? `  ${s.error_code}` : ''}${s.error ? `: ${s.error}` : ''}` : s.event,
        ),
      );
    detail.append(steps);
  }
  const show = el('button', 'show payload');
  show.type = 'button';
  const payload = el('pre');
  payload.hidden = true;
  show.addEventListener('click', async () => {
    const c = fact.channels[0];
    const q = new URLSearchParams({ source_name: fact.source_name, app_code: fact.app_code, source_event_id: fact.event_id, channel: c.channel });
    const r = await fetch(`${CONFIG.api}/payload?${q}`);
    const data = await r.json();
    payload.textContent = visible(data.payload ?? '(none)');
    payload.hidden = false;
  });
  detail.append(show, payload);
  line.addEventListener('click', () => {
    detail.hidden = !detail.hidden;
    line.setAttribute('aria-expanded', String(!detail.hidden));
  });
  li.append(line, detail);
  return li;
}
async function load() {
  if (!params.get('user_id') && !params.get('event_id')) {
    $('summary').textContent = `Give a user or an event id. Times in ${CONFIG.zone}.`;
    return;
  }
  const r = await fetch(`${CONFIG.api}/timeline?${params}`);
  const data = await r.json();
  if (!r.ok) {
    $('summary').textContent = `cannot show this: ${data.error}`;
    return;
  }
  $('facts').replaceChildren(...data.facts.map(render));
  $('summary').textContent =
    `${data.facts.length ? data.facts.length + (data.facts.length === 1 ? ' fact' : ' facts') : 'no facts match'}, newest first. Times in ${data.zone}.`;
  if (data.next_page_token) {
    const next = new URLSearchParams(params);
    next.set('page_token', data.next_page_token);
    $('older').href = `?${next}`;
    $('older').hidden = false;
  }
  if (data.facts.length === 1) document.querySelector('li.fact > button.line').click();
}
load().catch((err) => {
  $('summary').textContent = `timeline unavailable: ${err.message}`;
});
