import { escapeHtml } from './notices-page.ts';
import type { BackendState } from './backend-watch.ts';

/** What still works while a backend is unreachable, in the operator's words. */
const CONSEQUENCE: Record<string, string> = {
  mysql: 'the ledger cannot be read or changed: these pages show nothing new, ingest and deliver wait; nothing is lost',
  redis: 'the queue board is empty and sends wait (the ledger keeps every notice); the Notices and Timeline pages still work',
};

/** HH:mm:ss in the operator's zone, with the zone's name; two-digit hours spelled out, as en-GB alone gives "0:43:42" past midnight. */
const clockOptions = (zone: string): Intl.DateTimeFormatOptions => ({
  timeZone: zone,
  timeZoneName: 'short',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

/** The banner's place on a page: empty and hidden until a look at the health API finds a backend down. */
export const OUTAGE_BANNER = '<div id="outage" role="alert" hidden style="background:#b42318;color:#fff;padding:8px 16px;font-weight:600"></div>';

/** The banner's script: looks at `healthPath` now and every 3 s, so an outage shows within seconds on any open page. */
export function outageScript(healthPath: string, zone: string): string {
  const settings = JSON.stringify({ health: healthPath, clock: clockOptions(zone), consequence: CONSEQUENCE }).replace(/</g, '\\u003c');
  return `(function () {
  const s = ${settings};
  const el = document.getElementById('outage');
  const at = (ms) => new Date(ms).toLocaleTimeString('en-GB', s.clock);
  async function look() {
    let text = '';
    try {
      const answer = await fetch(s.health, { credentials: 'same-origin', cache: 'no-store' });
      const states = await answer.json();
      text = Object.entries(states)
        .filter(([, v]) => !v.ok)
        .map(([name, v]) => (name === 'mysql' ? 'MySQL' : 'Redis') + ' unreachable since ' + at(v.down_since_ms) + ': ' + (s.consequence[name] || ''))
        .join(' · ');
    } catch (err) {
      text = 'The dashboard server does not answer (' + err.message + ').';
    }
    el.textContent = text;
    el.hidden = text === '';
  }
  look();
  setInterval(look, 3000);
})();`;
}

/** What the queue board's address shows while Redis is down: the board needs Redis for everything it shows. */
export function boardOutagePage(base: string, redis: BackendState, zone: string): string {
  const since = redis.down_since_ms === null ? 'now' : new Date(redis.down_since_ms).toLocaleTimeString('en-GB', clockOptions(zone));
  return (
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>notice-service · queues unavailable</title></head>
<body style="font:14px system-ui,sans-serif;margin:0">
<div id="outage" role="alert" style="background:#b42318;color:#fff;padding:8px 16px;font-weight:600">Redis unreachable since ${escapeHtml(since)}: ` +
    `${escapeHtml(CONSEQUENCE.redis!)}</div>
<main style="padding:16px"><p>The queue board reads everything from Redis, so it has nothing to show until Redis answers again; this page does not ` +
    `refresh by itself.</p>
<p><a href="${escapeHtml(`${base}/notices`)}">Notices</a> · <a href="${escapeHtml(`${base}/timeline`)}">Timeline</a> ·
<a href="${escapeHtml(`${base}/queues`)}">try the board again</a></p></main>
</body></html>`
  );
}
