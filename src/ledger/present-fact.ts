import { formatTime } from '../platform/clock.ts';
import { errorGuideFor, errorLinkAnchor } from './error-guide.ts';
import { STATUS_TABLE } from './status.ts';
import type { LedgerRow } from './types.ts';
import type { TimelineFact } from './timeline.ts';

const SUPPRESSED_BY: Record<string, string> = { FREQUENCY_CAP: 'over the per-user push cap', QUIET_HOURS: "the user's quiet hours (policy drop)" };

/** One channel's row of a fact, in words: where it stands and why. */
export function channelStanding(row: LedgerRow, zone: string, maxRetryCount?: number) {
  const guide = errorGuideFor(row.lastErrorCode);
  const code = row.lastErrorCode;
  const reason = (() => {
    switch (row.status) {
      case 'delivered':
        return `delivered ${formatTime(row.deliveredAtMs ?? row.updatedAtMs, zone)}${row.attemptCount > 1 ? ` after ${row.attemptCount} attempts` : ''}`;
      case 'delivered_unconfirmed':
        return `sent ${formatTime(row.deliveredAtMs ?? row.updatedAtMs, zone)}, answer lost (${code ?? 'no code'}); not resent`;
      case 'superseded':
        return `not sent: superseded by ${row.supersededBy ?? 'a newer version'}`;
      case 'suppressed':
        return `not sent: ${SUPPRESSED_BY[row.lastErrorCode ?? ''] ?? "the user's preference"} (${row.lastError ?? ''})`;
      case 'deferred':
        // The wrapper wrote the moment on the user's clock ("deferred until 08:00 Asia/Shanghai (quiet hours)").
        return `${row.lastError ?? 'deferred'}; due ${formatTime(row.nextRetryAtMs, zone)}`;
      case 'revoked':
        return `taken back: ${row.lastError ?? 'revoked'}`;
      case 'revoking':
        return 'being taken back: the provider is asked to withdraw it';
      case 'digested':
        return `not pushed on its own: ${row.lastError ?? 'counted in a digest'}`;
      case 'skipped_read':
        return `not pushed: ${row.lastError ?? 'its inbox item was read first'}`;
      case 'expired':
        return `not sent: expired (${row.lastError ?? "older than its kind's expire_after"})`;
      case 'pending':
        return 'waiting for its first send';
      case 'delivering':
        return `sending (claimed by ${row.lockedBy ?? 'a worker'})`;
      case 'retryable':
        return `retrying at ${formatTime(row.nextRetryAtMs, zone)} (attempt ${row.attemptCount}${
          maxRetryCount !== undefined ? ` of ` + `${maxRetryCount + 1}` : ''
        }) after ${code ?? 'an error'}${guide ? `: ${guide.title}` : ''}`;
      case 'failed':
        return `failed with ${code ?? 'no code'}${guide ? `: ${guide.title}` : ''}`;
    }
  })();
  return {
    channel: row.channel,
    status: row.status,
    meaning: STATUS_TABLE[row.status].meaning,
    reason,
    error_code: code,
    error: row.lastError,
    error_anchor: code ? errorLinkAnchor(code) : null,
    what_to_do: guide && (row.status === 'failed' || row.status === 'retryable') ? guide.action : null,
    attempts: row.attemptCount,
    updated_at: formatTime(row.updatedAtMs, zone),
  };
}

/** A fact of the timeline: one line, a badge per channel. */
export function presentFact(fact: TimelineFact, zone: string, maxRetryFor: (source: string) => number) {
  return {
    at_ms: fact.createdAtMs,
    at: formatTime(fact.createdAtMs, zone),
    source_name: fact.sourceName,
    app_code: fact.appCode,
    event_id: fact.sourceEventId,
    event_type: fact.eventType,
    notice_kind: fact.noticeKind,
    user_id: fact.userId,
    channels: fact.rows.map((row) => channelStanding(row, zone, maxRetryFor(row.sourceName))),
  };
}
