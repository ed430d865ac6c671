import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { NoticeMetrics } from '../src/observability/metrics.ts';

/** The shipped Prometheus rules and Grafana board: they run, they use only metrics the processes export, and every alert has a runbook. */
const RULES = 'deploy/prometheus/notice-service.rules.yml';
const BOARD = 'deploy/grafana/notice-service.json';

async function exportedNames(): Promise<Set<string>> {
  const metrics = new NoticeMetrics();
  const names = new Set<string>();
  for (const m of await metrics.registry.getMetricsAsJSON()) {
    names.add(m.name);
    if (['histogram', 'summary'].includes(String(m.type))) for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${m.name}${suffix}`);
  }
  return names;
}

/** Label names that look like metric names (notice_kind), so the scan below can tell them apart. */
function labelNames(): Set<string> {
  const metrics = new NoticeMetrics({ processMetrics: false });
  return new Set(metrics.registry.getMetricsAsArray().flatMap((m) => (m as unknown as { labelNames?: string[] }).labelNames ?? []));
}

const usedNames = (text: string) => new Set([...text.matchAll(/\bnotice_[a-z0-9_]+/g)].map((m) => m[0]));

describe('Prometheus rules and Grafana board', () => {
  it('pass promtool: the rules are valid and each alert fires on its series and stays quiet on its near miss', () => {
    const check = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(check.error, "promtool is missing: install Debian's prometheus package (npm test's pretest does as root)").toBeUndefined();
    expect(check.status, check.stdout + check.stderr).toBe(0);
    const test = spawnSync('promtool', ['test', 'rules', 'notice-service.test.yml'], { cwd: 'deploy/prometheus/tests', encoding: 'utf8' });
    expect(test.status, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toContain('SUCCESS');
  });

  it('use only metric names the processes really export', async () => {
    const exported = await exportedNames();
    const labels = labelNames();
    expect(labels.has('notice_kind')).toBe(true);
    for (const file of [RULES, BOARD, 'deploy/prometheus/tests/notice-service.test.yml']) {
      const unknown = [...usedNames(readFileSync(file, 'utf8'))].filter((name) => !exported.has(name) && !labels.has(name));
      expect(unknown, file).toEqual([]);
    }
  });

  it('every alert is tested, has a summary, and links a runbook section that exists', () => {
    const rules = parse(readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Array<{ alert?: string; annotations?: Record<string, string> }> }> };
    const alerts = rules.groups.flatMap((g) => g.rules).filter((r) => r.alert);
    expect(alerts.length).toBeGreaterThanOrEqual(12);
    // The operations guide counts them right (it said 13 while the rules had 15).
    expect(readFileSync('docs/operations.md', 'utf8')).toContain(`the recording rules and ${alerts.length} alerts`);
    const tests = readFileSync('deploy/prometheus/tests/notice-service.test.yml', 'utf8');
    const runbook = readFileSync('docs/runbook.md', 'utf8');
    const anchors = new Set(
      [...runbook.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const alert of alerts) {
      expect(tests, alert.alert).toContain(`alertname: ${alert.alert}`);
      expect(alert.annotations?.summary, alert.alert).toBeTruthy();
      const link = /^docs\/runbook\.md#(.+)$/.exec(alert.annotations?.runbook ?? '');
      expect(link, `${alert.alert} runbook link`).not.toBeNull();
      expect(anchors.has(link![1]!), `${alert.alert}: docs/runbook.md has no section #${link![1]}`).toBe(true);
    }
  });

  it('the board is importable: a dashboard with a datasource variable, unique panel ids, and a query in every panel', () => {
    const board = JSON.parse(readFileSync(BOARD, 'utf8'));
    expect(board).toMatchObject({ uid: 'notice-service', title: 'notice-service', schemaVersion: expect.any(Number) });
    expect(board.templating.list.map((v: { name: string }) => v.name)).toEqual(expect.arrayContaining(['datasource', 'job']));
    const ids = board.panels.map((p: { id: number }) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of board.panels) {
      expect(panel.gridPos, panel.title).toMatchObject({ w: expect.any(Number), h: expect.any(Number) });
      expect(panel.datasource.uid, panel.title).toBe('${datasource}');
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets) expect(target.expr, panel.title).toMatch(/notice_/);
    }
    // The panels an on-call engineer looks for first.
    const titles = board.panels.map((p: { title: string }) => p.title).join(' | ');
    for (const topic of ['outcome', 'latency', 'lag', 'Quota', 'Queue', 'Reconciler']) expect(titles).toContain(topic);
  });
});
