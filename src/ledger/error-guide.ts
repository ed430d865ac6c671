/**
 * What an error code on a ledger row means and what an operator does about it: Tencent IM / TIMPush codes (from
 * ../shared/reference/tencent-im.md and tencent-push.md) and notice-service's own. The dashboard's error page, the
 * runbook's "Error codes" section and every link from a failed row or the timeline come from this one table.
 */
export interface ErrorGuideEntry {
  codes: readonly string[];
  title: string;
  /** Whether notice-service retries it by itself. */
  retried: boolean;
  action: string;
}

export const ERROR_GUIDE: readonly ErrorGuideEntry[] = [
  {
    codes: ['90003', '90012', '90048', '20003', '70107'],
    title: 'the recipient is not an imported Tencent IM account',
    retried: false,
    action: "Import the account (account_import) — the app does this at registration, so check that user's sign-up — then requeue the row.",
  },
  {
    codes: ['90008'],
    title: 'the sending admin account does not exist',
    retried: false,
    action: "Import tencent_im.admin_identifier (or the app's) as an account, then requeue.",
  },
  {
    codes: ['60010', '90009'],
    title: 'the identifier is not an app admin',
    retried: false,
    action: 'Set tencent_im.admin_identifier (or apps.<app>.admin_identifier) to an admin account of the app in the IM console.',
  },
  {
    codes: ['70009', '70013', '70014', '70016', '70020', '60025', '60026'],
    title: 'the UserSig or the app settings do not match the app',
    retried: false,
    action:
      'Check sdk_app_id, secret_key and base_url (the data center) of that app; a key of another app signs UserSigs Tencent refuses. Fix the config, ' +
      'restart deliver, requeue.',
  },
  {
    codes: ['70001', '70002', '70003', '20002', '70050'],
    title: 'the UserSig expired or could not be read',
    retried: true,
    action: 'Re-signed and retried by itself. If it persists, check the server clock and secret_key.',
  },
  {
    codes: ['60006', '60016', '60017', '60020', '80005', '60021'],
    title: 'the app is disabled, out of service or refuses this server',
    retried: false,
    action: 'Look at the app in the Tencent console (plan, arrears, IP allow-list); nothing is sent until it is fixed. Requeue after.',
  },
  {
    codes: ['60028', '72000', '72002', '70398'],
    title: 'a trial-edition quota is used up',
    retried: false,
    action: "Upgrade the app's edition or wait for the quota to reset, then requeue.",
  },
  {
    codes: ['60007', '60011', '60018', '60019', '90057'],
    title: "over Tencent's request rate (on timpush/batch, 90057: DataId too long)",
    retried: true,
    action:
      "Given back unspent and paced down by itself (notice_send_pace). If it persists, lower rate_limit_per_second to the app's real quota " +
      '(NoticeOverFrequency).',
  },
  {
    codes: ['60004', '60005', '60008', '60014', '70169', '70500', '20004', '20005', '90994', '91000', '90992', '80003', '90995'],
    title: 'a transient Tencent error',
    retried: true,
    action: 'Retried with backoff by itself; a row that failed with it spent max_retry_count: requeue it once Tencent answers again.',
  },
  {
    codes: ['80002', '93000', '90055', 'TOO_LARGE'],
    title: 'the message is larger than IM allows (12 KB)',
    retried: false,
    action: 'The owner service wrote a payload too big for one IM message; shorten it there. The other channels of the fact are not affected.',
  },
  {
    codes: ['80001', '80004', '20006'],
    title: "refused by moderation or by the app's own before-send callback",
    retried: false,
    action: "Nothing to requeue: the content or the app's callback refused it.",
  },
  {
    codes: ['90001', '90002', '90005', '90006', '90007', '90010', '90026', '90043', '90044', '90018', '90011', '90028', '90029'],
    title: 'Tencent could not read the request',
    retried: false,
    action: "A bug in notice-service's request: report it with the event id (inspect shows the payload).",
  },
  {
    codes: ['MALFORMED'],
    title: "the owner's fact could not be mapped (a payload that does not fit its type)",
    retried: false,
    action: 'The reason names the field. Fix the owner service; the row stays failed (requeue does not re-map it).',
  },
  { codes: ['NO_PAYLOAD'], title: 'the ledger row has no payload', retried: false, action: 'Only rows recorded as malformed have none; see MALFORMED.' },
  {
    codes: ['UNKNOWN_APP'],
    title: 'a fact of an app_code this deployment does not serve',
    retried: false,
    action:
      'Add the app under apps (with its Tencent account under apps.<app_code>.tencent_im; NoticeUnknownApp), restart, requeue; or the owner wrote a ' +
      'wrong app_code.',
  },
  {
    codes: ['POISON'],
    title: 'its sends kept starting and never finishing (the worker died each time)',
    retried: false,
    action: 'Look for crashes or OOM kills of deliver around its attempts (NoticePoisonEvents); requeue once fixed.',
  },
  {
    codes: ['SEND_SLOT_WAIT', 'LOCK_LOST'],
    title: 'no send slot within the ledger lock (given back unspent)',
    retried: true,
    action: 'Normal under a backlog; it is claimed again. Many of them with a low rate mean lock_ttl is short for the queue.',
  },
  {
    codes: ['EXPIRED'],
    title: "the notice was older than its kind's deliver.expire_after when its turn came",
    retried: false,
    action: 'Nothing to do: a stale notice is worth less than none. Raise deliver.expire_after for the kind if it should live longer.',
  },
  {
    codes: ['PREFERENCE'],
    title: 'the user turned this kind off on this channel',
    retried: false,
    action: 'Nothing to do: the user chose it (PreferencesService). Mandatory kinds (preferences.mandatory_kinds) are never suppressed.',
  },
  {
    codes: ['FREQUENCY_CAP'],
    title: "over the user's push cap (tencent_push.frequency_cap)",
    retried: false,
    action: 'Nothing to do: the notice still reached the inbox and C2C; only the phone push was held back.',
  },
  {
    codes: ['REVOKED'],
    title: 'taken back (owner fact NoticeRevoked or notice-service revoke): never sent, or withdrawn from the provider after it was sent',
    retried: false,
    action: "Nothing to do: the revocation's outcome per channel is in notice_revocations and the audit (notice-service audit).",
  },
  {
    codes: ['DIGEST'],
    title:
      "counted in a digest (tencent_push.digest): its window's leader sends one summary push with the count (status digested; the leader waits as deferred)",
    retried: false,
    action: 'Nothing to do: the inbox and C2C kept the notice; the phone got one summary for the burst.',
  },
  {
    codes: ['READ'],
    title: 'the push waited for escalate_after and its inbox item was read, archived or deleted first (status skipped_read)',
    retried: false,
    action: 'Nothing to do: the user saw the notice in the inbox, so the phone was not buzzed.',
  },
  {
    codes: ['ESCALATE'],
    title: 'the push is waiting for tencent_push.escalate_after (status deferred): it goes then only if the inbox item is still unread',
    retried: false,
    action: 'Nothing to do: it is decided at commit time + escalate_after.',
  },
  {
    codes: ['QUIET_HOURS'],
    title: "in the user's quiet hours: deferred until they end (status deferred), or dropped where quiet_hours.policy says drop",
    retried: false,
    action:
      "Nothing to do: a deferred notice goes when the window ends (inspect shows when, on the user's clock). If notice_deferred_overdue is above 0, " +
      'deliver is not releasing them: check deliver and the reconciler.',
  },
  {
    codes: ['SEND_INTERRUPTED'],
    title: 'a push that may have reached the phone was interrupted (recorded delivered_unconfirmed)',
    retried: false,
    action: 'By policy it is not resent (tencent_push.retry_ambiguous: false); the user may have it.',
  },
];

/** The guide entry of a code, if it has one. */
export function errorGuideFor(code: string | null | undefined): ErrorGuideEntry | undefined {
  if (!code) return undefined;
  return ERROR_GUIDE.find((e) => e.codes.includes(code)) ?? (/^HTTP_5\d\d$|^E[A-Z]+$/.test(code) ? TRANSPORT : undefined);
}

const TRANSPORT: ErrorGuideEntry = {
  codes: ['HTTP_5xx', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT'],
  title: 'a network or gateway error on the way to the provider',
  retried: true,
  action: 'Retried with backoff by itself. Many of them: check the route to the provider (NoticeDeliveriesFailing).',
};

/** The anchor of a code on the error page and in the runbook. */
export function errorAnchor(code: string): string {
  return `code-${code.replace(/[^A-Za-z0-9_]/g, '_')}`;
}

const UNKNOWN: ErrorGuideEntry = {
  codes: ['other'],
  title: 'a code this guide does not list',
  retried: false,
  action:
    "Unknown Tencent codes are treated as permanent (a retry would only burn quota). Look it up in Tencent's error-code page (docs/how-it-works.md " +
    'links it) and add it to src/ledger/error-guide.ts.',
};

/** Where a row's code links: its own anchor, its group's first (HTTP_502 → HTTP_5xx), or the unknown-code row. */
export function errorLinkAnchor(code: string): string {
  const entry = errorGuideFor(code);
  if (!entry) return errorAnchor('other');
  return errorAnchor(entry.codes.includes(code) ? code : entry.codes[0]!);
}

/** Every entry, the transport and unknown rows included (the error page lists these). */
export function allErrorGuideEntries(): readonly ErrorGuideEntry[] {
  return [...ERROR_GUIDE, TRANSPORT, UNKNOWN];
}

/** The runbook's "Error codes" section, generated (a test keeps docs/runbook.md in step). */
export function errorGuideMarkdown(): string {
  const rows = [...ERROR_GUIDE, TRANSPORT, UNKNOWN].map(
    (e) => `| ${e.codes.map((c) => `<a id="${errorAnchor(c)}"></a>\`${c}\``).join(' ')} | ${e.title} | ${e.retried ? 'yes' : 'no'} | ${e.action} |`,
  );
  return ['| code | what it means | retried by itself | what to do |', '|---|---|---|---|', ...rows].join('\n');
}
