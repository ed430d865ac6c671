import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { withDeadline } from '../platform/deadline.ts';

/**
 * Every metric notice-service exports, on one registry per process. Components receive this object and only call
 * its methods, so the domain code does not depend on prom-client.
 */
export class NoticeMetrics {
  readonly registry = new Registry();

  readonly ingestEvents = new Counter({
    name: 'notice_ingest_events_total',
    help: 'Source events seen by ingest, by result (ingested, skipped, malformed)',
    labelNames: ['source', 'event_type', 'result'],
    registers: [this.registry],
  });
  readonly mqMessages = new Counter({
    name: 'notice_mq_messages_total',
    help: 'MQ messages handled, by result (acked, rejected, record_failed)',
    labelNames: ['source', 'result'],
    registers: [this.registry],
  });
  readonly enqueueErrors = new Counter({
    name: 'notice_enqueue_errors_total',
    help: 'Batches that could not be recorded in the ledger or enqueued (MySQL/Redis down)',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly gapsSkipped = new Counter({
    name: 'notice_ingest_gap_ids_skipped_total',
    help: 'Outbox id holes not committed within gap_grace; they are then re-checked at growing intervals up to late_commit_horizon',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly gapsAbandoned = new Counter({
    name: 'notice_ingest_gap_ids_abandoned_total',
    help: 'Outbox id holes still not committed after late_commit_horizon: no longer watched (rolled back, or ids the writer never used)',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly lateRows = new Counter({
    name: 'notice_ingest_late_rows_total',
    help: 'Outbox rows that committed after gap_grace and were found by the late-commit re-check',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly outboxRewound = new Counter({
    name: 'notice_ingest_outbox_rewound_total',
    help: "Times a source's outbox was found behind its cursor (a failover to a replica that lacked rows, a restore) and the cursor went back to it",
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly watchedGapIds = new Gauge({
    name: 'notice_ingest_watched_gap_ids',
    help: 'Outbox id holes past gap_grace still re-checked for late commits',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly openGaps = new Gauge({
    name: 'notice_ingest_open_gap_ids',
    help: 'Outbox ids below the cursor still waited for',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly ingestLagMs = new Gauge({
    name: 'notice_ingest_lag_ms',
    help: 'Age (now minus created_at_ms) of the oldest outbox row not read yet; 0 when caught up',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly stalled = new Gauge({
    name: 'notice_ingest_stalled',
    help: '1 while a source has not finished a poll for longer than stall_threshold (readiness is red too)',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly secondsSinceProgress = new Gauge({
    name: 'notice_ingest_seconds_since_progress',
    help: 'Seconds since a poll of this source last finished without error',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly rowsBehind = new Gauge({
    name: 'notice_ingest_rows_behind',
    help: 'Newest outbox id minus the cursor high-water id',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly backpressured = new Gauge({
    name: 'notice_ingest_backpressured',
    help:
      '1 while this source reads no new rows because the deliver queues of every app hold max_queued_jobs (one full app only parks its facts in ' +
      'the ledger)',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly secondsSinceLastEvent = new Gauge({
    name: 'notice_ingest_seconds_since_last_event',
    help: 'Seconds since ingest last recorded an event',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly deliveries = new Counter({
    name: 'notice_deliveries_total',
    help: 'Delivery attempts by outcome (delivered, retryable, failed, rate_limited) and Tencent error code',
    labelNames: ['source', 'channel', 'notice_kind', 'outcome', 'error_code'],
    registers: [this.registry],
  });
  readonly deferrals = new Counter({
    name: 'notice_deferrals_total',
    help: 'Notices held back to wait for their moment (reason: quiet_hours), by channel',
    labelNames: ['channel', 'reason'],
    registers: [this.registry],
  });
  readonly deferred = new Gauge({
    name: 'notice_deferred',
    help: 'Ledger rows waiting for their moment (status deferred), counted by the reconciler leader each pass',
    registers: [this.registry],
  });
  readonly deferredOverdue = new Gauge({
    name: 'notice_deferred_overdue',
    help: 'Deferred rows whose moment passed more than 60 s ago and are still waiting (should be 0)',
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'notice_delivery_retries_total',
    help: 'Attempts that will be retried',
    labelNames: ['source', 'channel'],
    registers: [this.registry],
  });
  readonly rateLimitBackoffs = new Counter({
    name: 'notice_rate_limit_backoffs_total',
    help: "Tencent over-frequency answers (60007 and the like), per channel and app; each lowers that app's shared send pace a little (see notice_send_pace)",
    labelNames: ['channel', 'app'],
    registers: [this.registry],
  });
  readonly sendPace = new Gauge({
    name: 'notice_send_pace',
    help:
      'Share of the configured send rate in use after the last over-frequency answer seen by this process (1 = full; it recovers on its own), per ' +
      'paced channel and app',
    labelNames: ['channel', 'app'],
    registers: [this.registry],
  });
  readonly sendsRefused = new Counter({
    name: 'notice_send_admissions_refused_total',
    help:
      'Sends refused by the app-wide rate (sliding second full, or a back-off on) that queued up again; a steady rise means deliver processes ' +
      'reach their slots late (starved CPU); per paced channel and app',
    labelNames: ['channel', 'app'],
    registers: [this.registry],
  });
  readonly sendLatency = new Histogram({
    name: 'notice_send_latency_seconds',
    help: 'One send over a channel (the Tencent IM sendmsg round trip; the inbox insert)',
    labelNames: ['channel', 'outcome'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly sendSlotWait = new Histogram({
    name: 'notice_send_slot_wait_seconds',
    help:
      'Time a claimed send waited for its slot of the app-wide Tencent rate; when it nears end-to-end latency, the rate limit is what delivery ' +
      'waits for (per paced channel and app)',
    labelNames: ['channel', 'app'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly endToEndLatency = new Histogram({
    name: 'notice_end_to_end_latency_seconds',
    help: 'Outbox created_at_ms to delivered',
    labelNames: ['source', 'channel'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });
  readonly reconcilerRequeued = new Counter({
    name: 'notice_reconciler_requeued_total',
    help: 'Ledger rows found without a live job and enqueued again, by ledger status',
    labelNames: ['status'],
    registers: [this.registry],
  });
  readonly orphanJobsCleared = new Counter({
    name: 'notice_reconciler_orphan_jobs_cleared_total',
    help: 'Job hashes found in no BullMQ state (partial Redis loss) and removed so their rows could be re-added',
    registers: [this.registry],
  });
  readonly ghostJobs = new Counter({
    name: 'notice_deliver_ghost_jobs_total',
    help: 'Jobs whose Redis hash was gone (partial Redis loss): dropped; the reconciler re-adds their rows from the ledger',
    registers: [this.registry],
  });
  readonly ledgerPurged = new Counter({
    name: 'notice_ledger_purged_total',
    help: 'Final ledger rows deleted by retention',
    labelNames: ['status'],
    registers: [this.registry],
  });
  readonly poisoned = new Counter({
    name: 'notice_delivery_poison_total',
    help: 'Events failed because their sends kept starting but never finishing',
    labelNames: ['source', 'channel'],
    registers: [this.registry],
  });
  readonly ready = new Gauge({
    name: 'notice_ready',
    help: 'What /readyz answers, as a number: 1 ready, 0 not (read at scrape time), for alerting',
    registers: [this.registry],
  });
  readonly sendRateLimit = new Gauge({
    name: 'notice_send_rate_limit_per_second',
    help:
      'The rate per second this deliver process paces each paced channel against app-wide (tencent_im / tencent_push rate_limit_per_second, or the ' +
      'app own rate; 0 = off)',
    labelNames: ['channel', 'app'],
    registers: [this.registry],
  });
  readonly unknownApp = new Counter({
    name: 'notice_unknown_app_total',
    help: 'Ledger rows failed with UNKNOWN_APP: a fact of an app_code this deployment does not serve (apps); nothing was sent',
    labelNames: ['channel'],
    registers: [this.registry],
  });
  readonly pushBatchAccounts = new Histogram({
    name: 'notice_push_batch_accounts',
    help: 'Accounts per timpush/batch call (identical pushes share a call)',
    buckets: [1, 2, 5, 10, 50, 100, 250, 500],
    registers: [this.registry],
  });
  readonly inboxSwept = new Counter({
    name: 'notice_inbox_items_swept_total',
    help: 'Inbox items deleted by the sweeper, by reason (retention, cap)',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly inboxWatchStreams = new Gauge({
    name: 'notice_inbox_watch_streams',
    help: 'WatchInbox streams open on this process (each holds a slot of inbox.api_max_watch_streams)',
    registers: [this.registry],
  });
  readonly inboxWatchChannels = new Gauge({
    name: 'notice_inbox_watch_channels',
    help: 'Users whose live-inbox channel this process is subscribed to (one per user with an open stream)',
    registers: [this.registry],
  });
  readonly queueJobs = new Gauge({
    name: 'notice_queue_jobs',
    help: 'BullMQ jobs per queue and state',
    labelNames: ['queue', 'state'],
    registers: [this.registry],
  });

  readonly scrapeStale = new Gauge({
    name: 'notice_scrape_stale',
    help:
      'Scrape-time gauges that could not be read this scrape (1: their backend did not answer within the deadline, the values shown are the last ' +
      'ones read)',
    labelNames: ['collector'],
    registers: [this.registry],
  });

  private readonly collectors: Array<{ name: string; collect: () => Promise<void>; running?: Promise<void> }> = [];
  private readonly collectDeadlineMs: number;

  constructor(options: { processMetrics?: boolean; collectDeadlineMs?: number } = {}) {
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'notice_' });
    this.collectDeadlineMs = options.collectDeadlineMs ?? 1500;
  }

  /** Gauges that are read from MySQL/Redis at scrape time rather than kept up to date on the hot path. */
  onScrape(name: string, collect: () => Promise<void>): void {
    this.collectors.push({ name, collect });
  }

  /**
   * Every collector gets a deadline: with Redis down a BullMQ count waits for the reconnect, and a scrape that hangs
   * hides every other metric exactly when they matter. A collector still running from an earlier scrape is waited on,
   * not started again, so an outage does not pile a count per scrape into the client's offline queue.
   */
  async render(): Promise<string> {
    await Promise.all(
      this.collectors.map(async (collector) => {
        collector.running ??= collector.collect().finally(() => {
          collector.running = undefined;
        });
        const read = await withDeadline(collector.running, this.collectDeadlineMs, collector.name).then(
          () => true,
          () => false,
        );
        this.scrapeStale.set({ collector: collector.name }, read ? 0 : 1);
      }),
    );
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
