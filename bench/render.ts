/** bench/report.json → the markdown table printed and committed as bench/report.md. */
export function renderMarkdown(r: Record<string, any>): string {
  const out: string[] = [
    `# Benchmark (${r.generated_at}${r.smoke ? ', SMOKE — sizes too small to mean anything' : ''})`,
    '',
    `fake-im answers after ${r.im_latency_ms} ms; medians of ${r.runs} run(s); 2-core machine, everything co-located.`,
    '',
  ];
  if (r.partial_rerun)
    out.push(`Phases re-run at that time (\`BENCH_ONLY\`): ${r.partial_rerun.join(', ')}; the rest is from the full run of ${r.full_run_at}.`, '');
  for (const key of ['capacity_1x1', 'capacity_2x2', 'capacity_1x1_c128']) {
    const c = r[key];
    if (!c) continue;
    out.push(
      `**Capacity ${key.slice(9, 12)} (ingest×deliver), deliver concurrency ${c.concurrency ?? 64}**: ${c.median_events_per_second} events/s (runs ${c.runs.join(', ')}) for ${c.events} events; CPU s per 1k events: ingest ${c.median_cpu_s_per_1k.ingest}, deliver ${c.median_cpu_s_per_1k.deliver}, MariaDB ${c.median_cpu_s_per_1k.mariadb}, Redis ${c.median_cpu_s_per_1k.redis}; MySQL statements/event ${c.median_mysql_statements_per_event}; Redis commands/event ${c.median_redis_commands_per_event}; peak RSS MB ${JSON.stringify(c.peak_rss_mb)}`,
      '',
    );
  }
  if (r.baseline) {
    const ours = r.capacity_1x1?.median_events_per_second;
    out.push(
      `**Baseline (seed shape, 500 ms / 100)**: ${r.baseline.events_per_second} events/s; at 150/s it sent ${r.baseline.latency_at_150_per_s.sent}/${r.baseline.latency_at_150_per_s.of} with p99 ${r.baseline.latency_at_150_per_s.p99_ms} ms.` +
        (ours ? ` Ratio ours(1×1)/baseline throughput: **${Math.round((ours / r.baseline.events_per_second) * 10) / 10}×**.` : ''),
      '',
    );
  }
  if (r.latency_poller || r.latency_poller_limited) {
    out.push(
      '**Latency at 150 events/s (commit → fake-im receives)**, median of each column over the runs',
      '',
      '| path | poll_interval | p50 ms | p95 ms | p99 ms | max ms | idle statements/poll | p99 of each run |',
      '|---|---|---|---|---|---|---|---|',
    );
    const pollerRow = (path: string, l: any) =>
      `| ${path} | ${l.poll_interval} | ${l.p50_ms} | ${l.p95_ms} | ${l.p99_ms} | ${l.max_ms} | ${l.idle_statements_per_poll} | ${(l.p99_runs ?? [l.p99_ms]).join(', ')} |`;
    for (const l of r.latency_poller ?? []) out.push(pollerRow('MySQL poller', l));
    for (const l of r.latency_poller_limited ?? [])
      out.push(pollerRow(`MySQL poller, limit 200/s on${(l.delivers ?? 1) > 1 ? `, ${l.delivers} deliver` : ''}`, l));
    if (r.latency_mq)
      out.push(
        `| RocketMQ (publish → receive) | – | ${r.latency_mq.p50_ms} | ${r.latency_mq.p95_ms} | ${r.latency_mq.p99_ms} | ${r.latency_mq.max_ms} | – | ${(r.latency_mq.p99_runs ?? [r.latency_mq.p99_ms]).join(', ')} |`,
      );
    if (r.baseline && r.latency_poller?.[0])
      out.push('', `p99 ratio ours(500 ms)/baseline: ${Math.round((r.latency_poller[0].p99_ms / r.baseline.latency_at_150_per_s.p99_ms) * 1000) / 1000}`);
    out.push('');
  }
  if (r.rate_limit) {
    const l = r.rate_limit;
    out.push(
      `**Rate limit 200/s, 3 deliver processes, ${l.events} backlog** against a strict fake-im (refused calls count in the sliding second too; median rate; worst run for the busiest second and over-frequency): drained in ${l.drain_seconds} s, ${l.achieved_per_second}/s = ${l.share_of_200} % of 200/s; busiest second ${l.busiest_aligned_second} (aligned), ${l.busiest_sliding_second} (sliding); over-frequency answers ${l.over_frequency_answers} (median ${l.over_frequency_share ?? '–'} % of requests).`,
      '',
    );
    if (l.runs)
      out.push(
        `Runs (share of 200/s / over-frequency answers / busiest sliding second): ${l.runs.map((x: any) => `${x.share_of_200} % / ${x.over_frequency_answers} / ${x.busiest_sliding_second}`).join('; ')}`,
        '',
      );
  }
  if (r.overload) {
    const o = r.overload;
    out.push(
      `**Overload** (${o.users} users × ${o.versions} balance changes in one burst, a kick every ${o.kick_every_ms} ms, 2 deliver processes, fake-im refusing > 200 calls per sliding second and counting refused calls; medians of each column over the runs)`,
      '',
      '| variant | kick p50 ms | kick p99 ms | newest balance after burst, s | requests | requests / events | over-frequency answers | kick p99 of each run |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const v of [o.shipped, o.fifo])
      out.push(
        `| ${v.variant} | ${v.kick_p50_ms} | ${v.kick_p99_ms} | ${v.newest_balance_after_burst_s} | ${v.requests} | ${v.requests_share_of_events} % | ${v.over_frequency_answers} | ${v.runs.map((x: any) => x.kick_p99_ms).join(', ')} |`,
      );
    out.push('');
  }
  if (r.recovery) {
    const v = r.recovery;
    out.push(
      `**Recovery after Redis is lost** (${v.events} pending rows, Redis flushed, 1 deliver process, limit off, reconciler at its defaults; max_queued_jobs off so the whole backlog is in the ledger first): all delivered ${v.seconds_to_all_delivered} s after deliver started = ${v.events_per_second} events/s (runs ${v.runs.map((x: any) => x.seconds_to_all_delivered).join(', ')} s).`,
      '',
    );
  }
  if (r.growth) {
    out.push('**Growth** (median ms)', '', '| rows (outbox = ledger) | idle poll | batch poll (100 rows) | reconciler pass |', '|---|---|---|---|');
    for (const g of r.growth.points) out.push(`| ${g.rows} | ${g.idle_poll_ms} | ${g.batch_poll_ms} | ${g.reconciler_pass_ms} |`);
    out.push(
      '',
      `ratios largest/smallest: idle poll ${r.growth.ratios.idle_poll}, batch poll ${r.growth.ratios.batch_poll}, reconciler ${r.growth.ratios.reconciler_pass}`,
      '',
    );
  }
  if (r.sparse) {
    out.push(
      `**Sparse ids** (${r.sparse.rows} outbox rows, ids stepping by 1 and by 7; median ms)`,
      '',
      '| step | idle poll (holes past gap_grace) | idle poll (1,000 holes in grace) | batch poll (100 rows, 1,000 holes in grace) |',
      '|---|---|---|---|',
    );
    for (const p of r.sparse.points) out.push(`| ${p.step} | ${p.idle_poll_ms} | ${p.idle_poll_open_gaps_ms} | ${p.batch_poll_ms} |`);
    out.push(
      '',
      `ratios step 7 / step 1: idle poll ${r.sparse.ratios.idle_poll}, idle poll with holes in grace ${r.sparse.ratios.idle_poll_open_gaps}, batch poll ${r.sparse.ratios.batch_poll}`,
      '',
    );
  }
  if (r.inbox) {
    const i = r.inbox;
    out.push(
      `**Inbox** (${i.items} items over ${i.users} users; ${i.heavyUsers} users with ${i.heavyItems}, ${i.cappedUsers} at ${i.cappedItems}; filled in ${i.fill_seconds} s; gRPC client, ms)`,
      '',
      '| call | samples | p50 | p99 |',
      '|---|---|---|---|',
    );
    for (const k of [
      'list_first_page',
      'list_first_page_heavy_user',
      'list_unread_heavy_user',
      'list_page_50_heavy_user',
      'unread_count',
      'unread_count_heavy_user',
      'mark_all_read_capped_user',
      'mark_all_read_heavy_user',
    ])
      out.push(`| ${k.replace(/_/g, ' ')} | ${i[k].samples} | ${i[k].p50_ms} | ${i[k].p99_ms} |`);
    out.push('');
  }
  if (r.push_batch) {
    out.push(
      '**Push batching** (identical SystemNotice pushes, one per user, tencent_push at 30 calls/s; drain from deliver start; median over runs)',
      '',
      '| variant | notices | calls | accounts per call (median) | drain s (runs) | one call each at 30/s would take |',
      '|---|---|---|---|---|---|',
    );
    for (const v of [r.push_batch.batched, r.push_batch.single])
      out.push(
        `| ${v.variant} | ${v.notices} | ${v.calls} | ${v.accounts_per_call_median} | ${v.drain_seconds} (${v.drain_runs.join(', ')}) | ${v.unbatched_seconds_at_rate} s |`,
      );
    const e = r.push_batch.escalations;
    if (e)
      out.push(
        `| ${e.variant} | ${e.notices} | ${e.calls} | ${e.accounts_per_call_median} | ${e.drain_after_due_seconds} after falling due (one run); over-frequency answers ${e.over_frequency_answers} | ${e.unbatched_seconds_at_rate} s |`,
      );
    out.push('');
  }
  if (r.api_flood) {
    const f = r.api_flood;
    out.push(
      `**Inbox API flood vs delivery** (wallet notices at ${f.rate}/s for ${f.seconds} s, commit → fake-im, ms; ingest, deliver and inbox-api as separate processes; the flood: 3 loops of 4 MiB DeleteNotifications and thousands of small calls in flight from another process)`,
      '',
      '| run | quiet p50 | quiet p99 | flooded p50 | flooded p99 | p99 ratio |',
      '|---|---|---|---|---|---|',
    );
    f.runs.forEach((x: any, i: number) =>
      out.push(`| ${i + 1} | ${x.quiet.p50_ms} | ${x.quiet.p99_ms} | ${x.flood.p50_ms} | ${x.flood.p99_ms} | ${x.p99_ratio} |`),
    );
    out.push(
      '',
      `Median p99 ratio ${f.p99_ratio} (target ≤ 1.2); API answers in run 1: ${Object.entries(f.api_calls)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.`,
      '',
    );
  }
  if (r.apps) {
    const a = r.apps;
    out.push(
      `**Apps side by side** (app A in a storm: a ${a.a_backlog}-row wallet backlog at its 200/s quota; app B beside it: a kick every 250 ms and 50 balances/s for ${a.seconds} s; fake-im enforces 200/s per app; commit → fake-im, ms)`,
      '',
      '| run | A sent/s (share of quota) | A over-frequency | B kicks p50 / p99 | B balances p50 / p99 |',
      '|---|---|---|---|---|',
    );
    a.runs.forEach((x: any, i: number) =>
      out.push(
        `| ${i + 1} | ${x.a_sent_per_second} (${x.a_quota_share}) | ${(x.a_over_frequency_share * 100).toFixed(3)} % | ${x.b_kicks.p50_ms} / ${x.b_kicks.p99_ms} | ${x.b_balances.p50_ms} / ${x.b_balances.p99_ms} |`,
      ),
    );
    out.push('', '| apps | events | events/s (limit off) | deliver CPU ms/event | ingest CPU ms/event |', '|---|---|---|---|---|');
    for (const c of a.capacity ?? [])
      out.push(`| ${c.apps} | ${c.events} | ${c.events_per_second} | ${c.deliver_cpu_ms_per_event} | ${c.ingest_cpu_ms_per_event} |`);
    out.push('');
  }
  if (r.preferences) {
    const p = r.preferences;
    out.push(
      `**Preferences** (${p.users} users each holding a choice vs preferences off, alternating; capacity: ${p.events} events, 1 ingest + 1 deliver)`,
      '',
      '| | off | on | on / off |',
      '|---|---|---|---|',
      `| capacity events/s (runs) | ${p.off.median_events_per_second} (${p.off.runs.join(', ')}) | ${p.on.median_events_per_second} (${p.on.runs.join(', ')}) | ${p.ratio_on_to_off} |`,
      `| MySQL statements/event | ${p.off.median_mysql_statements_per_event} | ${p.on.median_mysql_statements_per_event} | |`,
    );
    if (p.overload)
      for (const k of ['kick_p99_ms', 'newest_balance_after_burst_s'])
        out.push(
          `| overload ${k.replace(/_/g, ' ')} (runs) | ${p.overload.off[k].median} (${p.overload.off[k].runs.join(', ')}) | ${p.overload.on[k].median} (${p.overload.on[k].runs.join(', ')}) | ${p.overload.ratio_on_to_off[k]} |`,
        );
    out.push('');
  }
  if (r.cost) {
    const c = r.cost;
    out.push(
      `**Cost per notice** (issue 37; 1 ingest × 1 deliver, ${c.events} facts preloaded, rate limit off; this tree against \`${String(c.baseline_commit).slice(0, 7)}\` built from git, alternating run by run; medians of each column, every run's events/s in brackets)`,
      '',
      '| variant | measure | before | now | now / before |',
      '| ------- | ------- | ------ | --- | ------------ |',
    );
    for (const variant of ['c2c', 'c2c_inbox_push']) {
      const v = c[variant];
      if (!v) continue;
      const rows: Array<[string, string, string, unknown]> = [
        [
          'events/s',
          `${v.baseline.events_per_second} (${v.baseline.runs_events_per_second.join(', ')})`,
          `${v.current.events_per_second} (${v.current.runs_events_per_second.join(', ')})`,
          v.ratio_current_to_baseline.events_per_second,
        ],
        ['deliveries/s', String(v.baseline.deliveries_per_second), String(v.current.deliveries_per_second), ''],
        [
          'deliver CPU ms/event',
          `${v.baseline.cpu_ms_per_event.deliver} (${v.baseline.runs_deliver_cpu_ms_per_event.join(', ')})`,
          `${v.current.cpu_ms_per_event.deliver} (${v.current.runs_deliver_cpu_ms_per_event.join(', ')})`,
          v.ratio_current_to_baseline.deliver_cpu_ms_per_event,
        ],
        [
          'ingest CPU ms/event',
          String(v.baseline.cpu_ms_per_event.ingest),
          String(v.current.cpu_ms_per_event.ingest),
          v.ratio_current_to_baseline.ingest_cpu_ms_per_event,
        ],
        [
          'MariaDB / Redis CPU ms/event',
          `${v.baseline.cpu_ms_per_event.mariadb} / ${v.baseline.cpu_ms_per_event.redis}`,
          `${v.current.cpu_ms_per_event.mariadb} / ${v.current.cpu_ms_per_event.redis}`,
          '',
        ],
        [
          'Redis commands/event',
          String(v.baseline.redis_commands_per_event),
          String(v.current.redis_commands_per_event),
          v.ratio_current_to_baseline.redis_commands_per_event,
        ],
        [
          'MySQL statements/event',
          String(v.baseline.mysql_statements_per_event),
          String(v.current.mysql_statements_per_event),
          v.ratio_current_to_baseline.mysql_statements_per_event,
        ],
        ['MySQL bytes received/event', String(v.baseline.mysql_bytes_per_event ?? '–'), String(v.current.mysql_bytes_per_event ?? '–'), ''],
        ['peak RSS MB', JSON.stringify(v.baseline.peak_rss_mb), JSON.stringify(v.current.peak_rss_mb), ''],
      ];
      for (const [measure, before, now, ratio] of rows) out.push(`| ${variant} | ${measure} | ${before} | ${now} | ${ratio} |`);
    }
    out.push('');
    for (const variant of ['c2c', 'c2c_inbox_push']) {
      const v = c[variant];
      if (!v) continue;
      const top = (m: Record<string, number>) =>
        Object.entries(m)
          .slice(0, 12)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ');
      out.push(
        `Redis commands per event by name, ${variant} — before: ${top(v.baseline.redis_commands_by_name)}; now: ${top(v.current.redis_commands_by_name)}.`,
        '',
      );
    }
  }
  if (r.cost_profile) {
    const p = r.cost_profile;
    out.push(
      `**Profile summary** (one ${p.variant} cost run of this tree, ${p.events} events, V8's CPU profiler on in ingest and deliver; share of each process's sampled time, idle excluded; \`BENCH_ONLY=cost_profile\`; a thread waiting in write(2) while MariaDB takes the packet on the same cores is sampled as writeBuffer)`,
      '',
    );
    for (const [role, d] of Object.entries(
      p.processes as Record<string, { cpu_ms: number; by_origin: Array<[string, number]>; top_functions: Array<[string, number]> }>,
    )) {
      const list = (items: Array<[string, number]>) => items.map(([k, pct]) => `${k} ${pct} %`).join(', ');
      out.push(`- ${role} (${d.cpu_ms} ms sampled): by origin ${list(d.by_origin)}; top functions ${list(d.top_functions)}.`);
    }
    out.push('');
  }
  if (r.soak) {
    const k = r.soak;
    out.push(
      `**Memory soak** (issue 37; 80 facts/s: 60 wallet → C2C, 20 activity → C2C, inbox and push; 1 ingest, 2 deliver; Redis is this prefix's alone; before = \`${String(k.baseline_commit).slice(0, 7)}\`${k.parallel ? '; both trees soaked side by side' : ''})`,
      '',
    );
    out.push(
      '| tree | minutes | Redis MB at minute 3 → end (growth) | kept jobs at the end | bytes per kept job | RSS MB at the end | C2C p99 ms first → last sample | lost |',
    );
    out.push(
      '| ---- | ------- | ----------------------------------- | -------------------- | ------------------ | ----------------- | ------------------------------ | ---- |',
    );
    for (const tree of ['baseline', 'current']) {
      const s = k[tree];
      if (!s) continue;
      const three = s.samples.find((x: any) => x.minute >= 3) ?? s.samples[0];
      out.push(
        `| ${tree === 'baseline' ? 'before' : 'now'} | ${s.minutes} | ${three.redis_used_mb} → ${s.samples.at(-1).redis_used_mb} (${s.redis_growth_after_warmup}×) | ${s.kept_jobs} | ${s.bytes_per_kept_job ?? '–'} | ${JSON.stringify(s.samples.at(-1).rss_mb)} | ${s.samples[0].p99_ms} → ${s.samples.at(-1).p99_ms} | ${s.lost} |`,
      );
    }
    out.push('');
  }
  if (r.inbox_live) {
    const l = r.inbox_live;
    out.push(
      `**Live inbox** (one inbox-api process, ${l.streams} WatchInbox streams open, then ${l.inserts_per_second} inserts/s for ${l.inserts} inserts through ingest, deliver and Redis pub/sub): RSS ${l.rss_idle_mb} → ${l.rss_with_streams_mb} MB (${l.kb_per_stream} KB per stream); idle CPU with every stream open ${l.idle_cpu_ms_per_s} ms/s; inbox insert → item_added p50 ${l.insert_to_event_p50_ms} ms, p99 ${l.insert_to_event_p99_ms} ms; owner's commit → item_added (ingest and deliver included) p50 ${l.event_p50_ms} ms, p99 ${l.event_p99_ms} ms over ${l.events_received} events; ${l.cpu_ms_per_event} ms inbox-api CPU per event. A read through another connection (request sent) → unread_changed on the user's stream (${l.reads} reads at 100/s, every stream open): p50 ${l.read_to_event_p50_ms} ms, p99 ${l.read_to_event_p99_ms} ms.${l.runs ? ` p99s of each run (insert → event / commit → event / read → event): ${l.runs.map((x: any) => `${x.insert_to_event_p99_ms} / ${x.event_p99_ms} / ${x.read_to_event_p99_ms}`).join('; ')} ms.` : ''}`,
      '',
    );
  }
  if (r.digest) {
    const d = r.digest;
    out.push(
      `**Digests** (${d.facts} reward facts to ${d.users} users over the burst, window ${d.window_s} s; pushes only): phones notified ${d.phones_notified} (${d.fewer_than_facts_percent} % fewer than facts) in ${d.push_calls} calls; summary after a user's first fact p50 ${d.summary_after_first_fact_p50_ms} ms, p99 ${d.summary_after_first_fact_p99_ms} ms (runs: ${d.p99_runs.join(', ')}), max ${d.summary_after_first_fact_max_ms} ms.`,
      '',
    );
  }
  if (r.footprint)
    out.push(
      r.footprint.redis_bytes_per_waiting_event === undefined
        ? `**Footprint**: Redis ${r.footprint.redis_bytes_per_waiting_job} bytes per waiting job; ingest peak RSS ${r.footprint.ingest_peak_rss_mb} MB.`
        : `**Footprint** (${r.footprint.waiting_events} events waiting in ${r.footprint.waiting_jobs} jobs): Redis ${r.footprint.redis_bytes_per_waiting_event} bytes per waiting event, ${r.footprint.redis_bytes_per_waiting_job} per waiting job; ingest peak RSS ${r.footprint.ingest_peak_rss_mb} MB.`,
      '',
    );
  out.push(...targets(r));
  return out.join('\n');
}

/** The issue's targets next to what this run measured. */
function targets(r: Record<string, any>): string[] {
  const rows: Array<[string, string, boolean | null]> = [];
  const c1 = r.capacity_1x1?.median_events_per_second;
  const c2 = r.capacity_2x2?.median_events_per_second;
  if (c1) rows.push(['capacity ≥ 2500/s with 1 ingest + 1 deliver (concurrency 64)', `${c1}/s`, c1 >= 2500]);
  const c128 = r.capacity_1x1_c128?.median_events_per_second;
  if (c128) rows.push(['capacity ≥ 2500/s with 1 ingest + 1 deliver (concurrency 128)', `${c128}/s`, c128 >= 2500]);
  if (c1 && c2) rows.push(['more with 2 + 2', `${c2}/s`, c2 > c1]);
  if (c1 && r.baseline)
    rows.push(['≥ 10× the seed-shaped baseline', `${Math.round((c1 / r.baseline.events_per_second) * 10) / 10}×`, c1 / r.baseline.events_per_second >= 10]);
  const l500 = r.latency_poller?.find((l: any) => l.poll_interval === '500ms');
  if (l500) rows.push(['p99 commit→send ≤ poll_interval + 100 ms at 150/s (500 ms)', `${l500.p99_ms} ms`, l500.p99_ms <= 600]);
  const under250 = r.latency_poller?.filter((l: any) => l.p99_ms < 250).map((l: any) => l.poll_interval);
  if (under250) rows.push(['a poll setting with p99 < 250 ms', under250.join(', ') || 'none', under250.length > 0]);
  if (r.rate_limit) {
    rows.push(['no one-second window above 200 (delivered)', `${r.rate_limit.busiest_sliding_second} (sliding)`, r.rate_limit.busiest_sliding_second <= 200]);
    rows.push([
      'over-frequency answers ≤ 0.1 % of requests (strict fake)',
      `${r.rate_limit.over_frequency_share ?? '–'} %`,
      (r.rate_limit.over_frequency_share ?? Infinity) <= 0.1,
    ]);
    rows.push(['drain ≥ 95 % of 200/s (aim 97 %)', `${r.rate_limit.share_of_200} %`, r.rate_limit.share_of_200 >= 95]);
  }
  if (r.overload) {
    const s = r.overload.shipped;
    rows.push(['overload: kick p99 ≤ 1 s', `${s.kick_p99_ms} ms`, s.kick_p99_ms <= 1000]);
    rows.push(['overload: every newest balance ≤ 10 s after the burst', `${s.newest_balance_after_burst_s} s`, s.newest_balance_after_burst_s <= 10]);
    rows.push(['overload: requests ≤ 25 % of events', `${s.requests_share_of_events} %`, s.requests_share_of_events <= 25]);
  }
  if (r.growth) {
    for (const k of ['idle_poll', 'batch_poll', 'reconciler_pass'])
      rows.push([`${k.replace('_', ' ')} at 2M within 1.5× of 10k`, `${r.growth.ratios[k]}×`, r.growth.ratios[k] <= 1.5]);
  }
  if (r.inbox) {
    for (const k of ['list_first_page', 'list_first_page_heavy_user', 'unread_count', 'unread_count_heavy_user'])
      rows.push([`inbox ${k.replace(/_/g, ' ')} p99 ≤ 10 ms`, `${r.inbox[k].p99_ms} ms`, r.inbox[k].p99_ms <= 10]);
    rows.push([
      'inbox mark-all-read on a capped user p99 ≤ 50 ms',
      `${r.inbox.mark_all_read_capped_user.p99_ms} ms`,
      r.inbox.mark_all_read_capped_user.p99_ms <= 50,
    ]);
  }
  if (r.sparse) {
    for (const k of ['idle_poll', 'batch_poll'])
      rows.push([`${k.replace('_', ' ')} at step 7 within 1.5× of step 1`, `${r.sparse.ratios[k]}×`, r.sparse.ratios[k] <= 1.5]);
  }
  if (r.preferences)
    rows.push(["capacity with 100k users' preferences within 10 % of none", `${r.preferences.ratio_on_to_off}×`, r.preferences.ratio_on_to_off >= 0.9]);
  if (r.digest) {
    rows.push([
      'digest: phones notified ≤ users (≥ 80 % fewer)',
      `${r.digest.phones_notified} (${r.digest.fewer_than_facts_percent} % fewer)`,
      r.digest.phones_notified <= r.digest.users,
    ]);
    const limit = r.digest.window_s * 1000 + 3000;
    rows.push([
      'digest: summary ≤ window + 3 s after the first fact (p99)',
      `${r.digest.summary_after_first_fact_p99_ms} ms`,
      r.digest.summary_after_first_fact_p99_ms <= limit,
    ]);
  }
  const deliverRss = r.capacity_1x1
    ? Object.entries(r.capacity_1x1.peak_rss_mb)
        .filter(([k]) => k.startsWith('deliver'))
        .map(([, v]) => v as number)
    : [];
  if (deliverRss.length) rows.push(['deliver RSS ≤ 200 MB at concurrency 64', `${Math.max(...deliverRss)} MB`, Math.max(...deliverRss) <= 200]);
  if (rows.length === 0) return [];
  return ['**Targets**', '', '| target | measured | met |', '|---|---|---|', ...rows.map(([t, m, ok]) => `| ${t} | ${m} | ${ok ? 'yes' : 'no'} |`), ''];
}
