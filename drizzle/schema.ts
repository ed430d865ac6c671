/**
 * notice-service's own tables. These are the only tables it writes; owner outboxes are read-only to it.
 * SQL is generated from this file by drizzle-kit (`npm run db:generate`) into drizzle/migrations/.
 */
import { bigint, binary, customType, index, int, mediumtext, mysqlTable, primaryKey, tinyint, uniqueIndex, varbinary, varchar } from 'drizzle-orm/mysql-core';

/** Raw message bytes, which need not be valid UTF-8. */
const mediumblob = customType<{ data: Buffer }>({ dataType: () => 'mediumblob' });

/** The delivery ledger: one row per (source event, channel). Its primary key is the dedup boundary. */
export const noticeDeliveryEvents = mysqlTable(
  'notice_delivery_events',
  {
    sourceName: varchar('source_name', { length: 64 }).notNull(),
    // The owner's identifiers are compared byte for byte: a case-, accent-, width- or pad-insensitive collation
    // would fold two distinct outbox events (`ss`/`ß`, `x`/`x `) into one ledger row and drop the second. UTF-8 text
    // in VARBINARY, decoded by the pool (src/platform/mysql.ts); lengths are the owner's columns in bytes (×4).
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    sourceEventId: varbinary('source_event_id', { length: 764 }).notNull(),
    channel: varchar('channel', { length: 32 }).notNull(),
    eventType: varchar('event_type', { length: 64 }).notNull(),
    /** The recipient (Tencent UserID, ≤ 32 bytes); '' on a malformed row whose recipient was not valid. */
    userId: varbinary('user_id', { length: 256 }).notNull(),
    /** One of src/ledger/status.ts: pending | delivering | delivered | delivered_unconfirmed | retryable | failed | superseded | suppressed | expired (24 since 0009) */
    status: varchar('status', { length: 24 }).notNull(),
    /** The notice kind (TIMCustomElem.Ext): wallet_notice, vip_notice, room_notice. */
    noticeKind: varchar('notice_kind', { length: 32 }).notNull(),
    /** Sends whose result is known (delivered, or an error answer). */
    attemptCount: int('attempt_count').notNull().default(0),
    /** Times a worker took the row; more claims than attempts means sends that never finished. */
    claimCount: int('claim_count').notNull().default(0),
    lockedBy: varchar('locked_by', { length: 128 }),
    lockUntilMs: bigint('lock_until_ms', { mode: 'number' }),
    nextRetryAtMs: bigint('next_retry_at_ms', { mode: 'number' }),
    lastErrorCode: varchar('last_error_code', { length: 32 }),
    lastError: varchar('last_error', { length: 1024 }),
    /** The exact client payload (JSON text) sent as TIMCustomElem.Data; NULL only for rows that failed mapping. */
    payload: mediumtext('payload'),
    providerRef: varchar('provider_ref', { length: 128 }),
    sourceRowId: bigint('source_row_id', { mode: 'number', unsigned: true }),
    sourceCreatedAtMs: bigint('source_created_at_ms', { mode: 'number' }),
    createdAtMs: bigint('created_at_ms', { mode: 'number' }).notNull(),
    updatedAtMs: bigint('updated_at_ms', { mode: 'number' }).notNull(),
    deliveredAtMs: bigint('delivered_at_ms', { mode: 'number' }),
    /**
     * For notices a newer one makes obsolete (a balance): SHA-256 of what they are about (event type, app, user,
     * asset) and the fact's version within it. NULL for every other notice.
     */
    supersedeKey: varbinary('supersede_key', { length: 32 }),
    supersedeVersion: bigint('supersede_version', { mode: 'number' }),
    /** The source_event_id of the newer notice that made this one obsolete (status superseded). */
    supersededBy: varbinary('superseded_by', { length: 764 }),
    /**
     * The BullMQ job that carries this row's first attempt with other rows of its ingest batch (deliver.rows_per_job);
     * NULL when the row has a job of its own. The reconciler counts a row in a live batch job as queued.
     */
    batchJobId: varchar('batch_job_id', { length: 64 }),
  },
  (t) => [
    primaryKey({ name: 'pk_notice_delivery_events', columns: [t.sourceName, t.appCode, t.sourceEventId, t.channel] }),
    // Recovery scans: rows of one status ordered by when they become due.
    index('idx_nde_status_retry').on(t.status, t.nextRetryAtMs),
    index('idx_nde_status_updated').on(t.status, t.updatedAtMs),
    // Operator look-ups by business key.
    index('idx_nde_event_id').on(t.sourceEventId),
    index('idx_nde_user').on(t.userId, t.createdAtMs),
    // At send time: is there a newer version of the same balance?
    index('idx_nde_supersede').on(t.supersedeKey, t.supersedeVersion),
  ],
);

/**
 * Ingest position per outbox source: the highest id read, the holes below it still waited for, and the lease
 * that lets exactly one ingest process advance the cursor at a time.
 */
export const noticeIngestCursors = mysqlTable('notice_ingest_cursors', {
  sourceName: varchar('source_name', { length: 64 }).primaryKey(),
  highWaterId: bigint('high_water_id', { mode: 'number', unsigned: true }).notNull().default(0),
  /** JSON array of [fromId, toId, firstSeenMs] ranges not yet seen committed. */
  openGaps: mediumtext('open_gaps').notNull(),
  /**
   * Which row stood at high_water_id when the cursor passed it (app code NUL event id): after a MySQL failover the
   * ids below the cursor may have been handed out again, and this tells a re-read cursor whether its outbox is the
   * one it read. NULL for cursors saved before it existed.
   */
  highWaterRow: varbinary('high_water_row', { length: 1024 }),
  leaseOwner: varchar('lease_owner', { length: 128 }),
  leaseUntilMs: bigint('lease_until_ms', { mode: 'number' }).notNull().default(0),
  updatedAtMs: bigint('updated_at_ms', { mode: 'number' }).notNull(),
});

/**
 * Outbox id holes given up after gap_grace, still re-checked for late commits up to late_commit_horizon. One row per
 * chunk of holes given up together (≤ 200 ranges, one primary-key statement per check), so a sparse id sequence
 * (auto_increment_increment > 1) costs a row per chunk, not per hole.
 */
export const noticeIngestWatchedGaps = mysqlTable(
  'notice_ingest_watched_gaps',
  {
    sourceName: varchar('source_name', { length: 64 }).notNull(),
    /** The chunk's first hole id: with source_name, its key (holes are given up once, so chunks never overlap). */
    fromId: bigint('from_id', { mode: 'number', unsigned: true }).notNull(),
    toId: bigint('to_id', { mode: 'number', unsigned: true }).notNull(),
    /** JSON array of [fromId, toId] hole ranges still not seen committed. */
    ranges: mediumtext('ranges').notNull(),
    holeIds: bigint('hole_ids', { mode: 'number' }).notNull(),
    firstSeenMs: bigint('first_seen_ms', { mode: 'number' }).notNull(),
    nextCheckAtMs: bigint('next_check_at_ms', { mode: 'number' }).notNull(),
    checks: int('checks').notNull().default(0),
  },
  (t) => [primaryKey({ name: 'pk_notice_ingest_watched_gaps', columns: [t.sourceName, t.fromId] }), index('idx_niwg_due').on(t.sourceName, t.nextCheckAtMs)],
);

/**
 * MQ messages that could not be turned into a ledger row: poison (not JSON, missing fields) or still failing after
 * `consumer_max_reconsume_times` deliveries. Kept so that acking them loses nothing an operator cannot see.
 */
export const noticeRejectedMessages = mysqlTable(
  'notice_rejected_messages',
  {
    id: bigint('id', { mode: 'number', unsigned: true }).autoincrement().primaryKey(),
    sourceName: varchar('source_name', { length: 64 }).notNull(),
    messageId: varbinary('message_id', { length: 128 }).notNull(),
    topic: varchar('topic', { length: 255 }).notNull(),
    tag: varchar('tag', { length: 255 }),
    messageKeys: varchar('message_keys', { length: 512 }),
    deliveryAttempt: int('delivery_attempt').notNull(),
    /** At most the first 64 KiB; a longer body can never be parsed (nor requeued), so only its length and hash are kept beside. */
    rawBody: mediumblob('raw_body'),
    bodyBytes: int('body_bytes').notNull().default(0),
    bodySha256: binary('body_sha256', { length: 32 }),
    reason: varchar('reason', { length: 1024 }).notNull(),
    createdAtMs: bigint('created_at_ms', { mode: 'number' }).notNull(),
  },
  (t) => [uniqueIndex('uk_nrm_source_message').on(t.sourceName, t.messageId), index('idx_nrm_created').on(t.createdAtMs)],
);

/**
 * What operators did to the pipeline (requeues from the Notices page or the CLI): who, when, through what, what they
 * asked for and how many rows it touched. Append-only; read newest first on the Notices page.
 */
export const noticeOperatorActions = mysqlTable(
  'notice_operator_actions',
  {
    id: bigint('id', { mode: 'number', unsigned: true }).autoincrement().primaryKey(),
    atMs: bigint('at_ms', { mode: 'number' }).notNull(),
    /** The dashboard's basic-auth user, or `<os user>@<host>` for the CLI. */
    actor: varchar('actor', { length: 191 }).notNull(),
    /** dashboard | cli */
    via: varchar('via', { length: 16 }).notNull(),
    /** requeue_failed */
    action: varchar('action', { length: 32 }).notNull(),
    matched: int('matched').notNull(),
    affected: int('affected').notNull(),
    /** JSON: the filters or the first event ids, and why rows were skipped. */
    detail: mediumtext('detail').notNull(),
  },
  (t) => [index('idx_noa_at').on(t.atMs)],
);

/**
 * How a delivery got where it is, beyond a first-try success (which costs nothing here): each attempt that did not
 * deliver, a delivery after retries, a superseded finish, an operator's requeue. Bounded per event by construction
 * (max_retry_count attempts per requeue); purged with `retention.delivered`.
 */
export const noticeDeliveryHistory = mysqlTable(
  'notice_delivery_history',
  {
    id: bigint('id', { mode: 'number', unsigned: true }).autoincrement().primaryKey(),
    sourceName: varchar('source_name', { length: 64 }).notNull(),
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    sourceEventId: varbinary('source_event_id', { length: 764 }).notNull(),
    channel: varchar('channel', { length: 32 }).notNull(),
    atMs: bigint('at_ms', { mode: 'number' }).notNull(),
    /** retryable | failed | poison | superseded | delivered | requeued */
    event: varchar('event', { length: 24 }).notNull(),
    /** The worker id, or the operator who requeued. */
    actor: varchar('actor', { length: 191 }).notNull(),
    errorCode: varchar('error_code', { length: 32 }),
    errorMessage: varchar('error_message', { length: 1024 }),
    latencyMs: int('latency_ms'),
  },
  (t) => [index('idx_ndh_event').on(t.sourceEventId, t.atMs), index('idx_ndh_at').on(t.atMs)],
);

/**
 * The site inbox (the inbox channel): one item per user per notice, written by deliver from the ledger row of
 * channel `inbox`, read and changed by the gateway through notice.inbox.v1.InboxService. Pages are keyset on `id`
 * (arrival order); every query starts with (app_code, user_id), so each index below serves one user's slice.
 */
export const noticeInboxItems = mysqlTable(
  'notice_inbox_items',
  {
    id: bigint('id', { mode: 'number', unsigned: true }).autoincrement().notNull(),
    /** SHA-256 of the fact's ledger key without its channel: a repeated delivery of one fact is one item. */
    factHash: binary('fact_hash', { length: 32 }).notNull(),
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    userId: varbinary('user_id', { length: 256 }).notNull(),
    sourceName: varchar('source_name', { length: 64 }).notNull(),
    sourceEventId: varbinary('source_event_id', { length: 764 }).notNull(),
    noticeKind: varchar('notice_kind', { length: 32 }).notNull(),
    eventType: varchar('event_type', { length: 64 }).notNull(),
    /** The notice payload (JSON), as the C2C message carries it. */
    payload: mediumtext('payload').notNull(),
    /** Invariant: is_archived = 1 implies is_read = 1. */
    isRead: tinyint('is_read').notNull().default(0),
    isArchived: tinyint('is_archived').notNull().default(0),
    createdAtMs: bigint('created_at_ms', { mode: 'number' }).notNull(),
    readAtMs: bigint('read_at_ms', { mode: 'number' }),
    archivedAtMs: bigint('archived_at_ms', { mode: 'number' }),
    /** created_at_ms + the kind's retention; NULL keeps it until the per-user cap pushes it out. */
    expireAtMs: bigint('expire_at_ms', { mode: 'number' }),
  },
  (t) => [
    // Clustered by user: one user's items share leaf pages, so a page, a count or mark-all reads a few pages
    // instead of one page per item (ids interleave every user's arrivals). See docs/decisions/0003-inbox-clustering.md.
    primaryKey({ name: 'pk_nii', columns: [t.appCode, t.userId, t.id] }),
    // InnoDB needs AUTO_INCREMENT to lead some index.
    index('idx_nii_id').on(t.id),
    uniqueIndex('uk_nii_fact').on(t.factHash),
    index('idx_nii_list').on(t.appCode, t.userId, t.isArchived),
    index('idx_nii_unread').on(t.appCode, t.userId, t.isRead),
    index('idx_nii_kind').on(t.appCode, t.userId, t.noticeKind, t.isArchived),
    index('idx_nii_expire').on(t.expireAtMs),
  ],
);

/**
 * A user's choice per notice kind and channel (PreferencesService). No row = enabled: only opt-outs (and the opt-ins
 * that undo them) are stored, so 100k users with a few choices each are a few hundred thousand small rows.
 */
export const noticePreferences = mysqlTable(
  'notice_preferences',
  {
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    userId: varbinary('user_id', { length: 256 }).notNull(),
    noticeKind: varchar('notice_kind', { length: 32 }).notNull(),
    channel: varchar('channel', { length: 32 }).notNull(),
    enabled: tinyint('enabled').notNull(),
    updatedAtMs: bigint('updated_at_ms', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'pk_notice_preferences', columns: [t.appCode, t.userId, t.noticeKind, t.channel] })],
);

/**
 * A user's quiet hours (PreferencesService SetQuietHours): an IANA zone and up to four daily windows, as JSON text
 * ([{start, end}]). One row per user; no row = never quiet.
 */
export const noticeQuietHours = mysqlTable(
  'notice_quiet_hours',
  {
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    userId: varbinary('user_id', { length: 256 }).notNull(),
    timeZone: varchar('time_zone', { length: 64 }).notNull(),
    windows: varchar('windows', { length: 512 }).notNull(),
    updatedAtMs: bigint('updated_at_ms', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'pk_notice_quiet_hours', columns: [t.appCode, t.userId] })],
);

/**
 * The current digest window of one scope (app, user, channel, kind, key: '' or a room): a burst of notices becomes one
 * summary sent by its leader row when the window closes. `seq` numbers the scope's windows.
 */
export const noticeDigests = mysqlTable(
  'notice_digests',
  {
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    userId: varbinary('user_id', { length: 256 }).notNull(),
    channel: varchar('channel', { length: 32 }).notNull(),
    noticeKind: varchar('notice_kind', { length: 32 }).notNull(),
    digestKey: varbinary('digest_key', { length: 128 }).notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    /** open: members may join; closed: its summary is counted (and sent, or being sent, by the leader). */
    state: varchar('state', { length: 8 }).notNull(),
    openedAtMs: bigint('opened_at_ms', { mode: 'number' }).notNull(),
    closesAtMs: bigint('closes_at_ms', { mode: 'number' }).notNull(),
    /** The ledger row (source_name, source_event_id) that waits for the close and sends the summary; null until one. */
    leaderSourceName: varchar('leader_source_name', { length: 64 }),
    leaderEventId: varbinary('leader_event_id', { length: 764 }),
    updatedAtMs: bigint('updated_at_ms', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'pk_notice_digests', columns: [t.appCode, t.userId, t.channel, t.noticeKind, t.digestKey] })],
);

/** A ledger row counted in a digest window: one per row (joining twice is a no-op), found by the row's key. */
export const noticeDigestMembers = mysqlTable(
  'notice_digest_members',
  {
    sourceName: varchar('source_name', { length: 64 }).notNull(),
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    sourceEventId: varbinary('source_event_id', { length: 764 }).notNull(),
    channel: varchar('channel', { length: 32 }).notNull(),
    userId: varbinary('user_id', { length: 256 }).notNull(),
    noticeKind: varchar('notice_kind', { length: 32 }).notNull(),
    digestKey: varbinary('digest_key', { length: 128 }).notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    /** 1 for the window's leader: the row that sends its summary. */
    leads: tinyint('leads').notNull().default(0),
    /** The fact's commit time: the newest member is the one the summary shows. */
    createdAtMs: bigint('created_at_ms', { mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'pk_notice_digest_members', columns: [t.sourceName, t.appCode, t.sourceEventId, t.channel] }),
    index('idx_ndm_window').on(t.appCode, t.userId, t.channel, t.noticeKind, t.digestKey, t.seq),
  ],
);

/** Per user, the newest inbox item id they have seen (MarkSeen): the bell badge counts items above it. One row a user. */
export const noticeInboxSeen = mysqlTable(
  'notice_inbox_seen',
  {
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    userId: varbinary('user_id', { length: 256 }).notNull(),
    seenUpToId: bigint('seen_up_to_id', { mode: 'number', unsigned: true }).notNull(),
    updatedAtMs: bigint('updated_at_ms', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'pk_notice_inbox_seen', columns: [t.appCode, t.userId] })],
);

/**
 * A request to take a fact's notices back (owner fact NoticeRevoked, or `notice-service revoke`): one row per fact,
 * so asking twice is one revocation. deliver works it off: unsent rows end revoked, sent ones are withdrawn.
 */
export const noticeRevocations = mysqlTable(
  'notice_revocations',
  {
    sourceName: varchar('source_name', { length: 64 }).notNull(),
    appCode: varbinary('app_code', { length: 128 }).notNull(),
    sourceEventId: varbinary('source_event_id', { length: 764 }).notNull(),
    /** pending: still being worked off; done: every channel's row is revoked (or could not be taken back, noted). */
    state: varchar('state', { length: 8 }).notNull(),
    requestedBy: varchar('requested_by', { length: 128 }).notNull(),
    requestedAtMs: bigint('requested_at_ms', { mode: 'number' }).notNull(),
    doneAtMs: bigint('done_at_ms', { mode: 'number' }),
    /** What happened per channel, for inspect and the audit ("tencent_im_c2c: withdrawn; inbox: removed; …"). */
    outcome: varchar('outcome', { length: 1024 }),
  },
  (t) => [primaryKey({ name: 'pk_notice_revocations', columns: [t.sourceName, t.appCode, t.sourceEventId] }), index('idx_nrv_state').on(t.state)],
);
