/**
 * fake-im's TIMPush all-user and tag push (`v4/timpush/push`), its recall (`v4/timpush/revoke`) and the user tags
 * (`add_tag`, `remove_tag`), with the rules and error codes of ../shared/reference/tencent-push.md §4–5, so the
 * broadcast channel is tested against the limits it will meet. Pure state over an injected clock; server.ts routes to it.
 * Unverified at Tencent and assumed here as the reference states it: MsgRandom deduplicates a push for 7 days.
 */

/** One accepted all-user or tag push. */
export interface AllPushTask {
  taskId: string;
  sdkAppId: number;
  msgRandom: number;
  /** null: every user of the app. */
  condition: { TagsAnd?: string[]; TagsOr?: string[]; AttrsAnd?: Record<string, string>; AttrsOr?: Record<string, string> } | null;
  offlinePushInfo: unknown;
  receivedAtMs: number;
  revokedAtMs: number | null;
}

export interface AllPushLimits {
  /** Pushes per app per UTC day (90047): 10 free, 100 standard. */
  perDay: number;
}

type Answer = Record<string, unknown>;
const ok = (extra: Answer = {}): Answer => ({ ActionStatus: 'OK', ErrorCode: 0, ErrorInfo: '', ...extra });
const fail = (code: number, info: string): Answer => ({ ActionStatus: 'FAIL', ErrorCode: code, ErrorInfo: info });

const DEDUP_MS = 7 * 24 * 3600 * 1000;
const REVOKE_WINDOW_MS = 24 * 3600 * 1000;
const MAX_BODY_BYTES = 10 * 1024;
const MAX_TAGS = 10;
const MAX_TAG_BYTES = 50;
const MAX_TAGS_PER_USER = 100;
const MAX_TAGS_PER_APP = 1000;
const MAX_USERS_PER_TAG_CALL = 100;

const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((t) => typeof t === 'string');

/** What is wrong with a list of tags (in a condition or an add_tag request), or null. */
function tagsProblem(tags: readonly string[]): Answer | null {
  if (tags.some((t) => t === '')) return fail(90040, 'a tag is empty');
  if (tags.some((t) => Buffer.byteLength(t) > MAX_TAG_BYTES)) return fail(90020, `a tag is longer than ${MAX_TAG_BYTES} bytes`);
  if (tags.length > MAX_TAGS) return fail(90032, `more than ${MAX_TAGS} tags`);
  return null;
}

export class FakeAllPush {
  readonly tasks: AllPushTask[] = [];
  /** sdkAppId → account → tags. */
  private readonly tags = new Map<number, Map<string, Set<string>>>();
  private lastPushMs = new Map<number, number>();
  private lastRevokeMs = new Map<number, number>();
  private nextTask = 1;

  constructor(
    private readonly limits: AllPushLimits = { perDay: 100 },
    private readonly now: () => number = Date.now,
  ) {}

  /** `v4/timpush/push`: all users (no Condition) or a tag/attribute condition; one task per MsgRandom for 7 days. */
  push(sdkAppId: number, body: string, msg: Record<string, unknown>): Answer {
    if (Buffer.byteLength(body) > MAX_BODY_BYTES) return fail(90056, `the body is over ${MAX_BODY_BYTES} bytes`);
    const msgRandom = msg.MsgRandom;
    if (typeof msgRandom !== 'number' || !Number.isInteger(msgRandom) || msgRandom < 0 || msgRandom > 4294967295)
      return fail(90005, 'MsgRandom is missing or not an integer');
    const condition = msg.Condition;
    let parsed: AllPushTask['condition'] = null;
    if (condition !== undefined) {
      if (typeof condition !== 'object' || condition === null) return fail(90001, 'Condition must be an object');
      const c = condition as Record<string, unknown>;
      const hasTags = c.TagsAnd !== undefined || c.TagsOr !== undefined;
      const hasAttrs = c.AttrsAnd !== undefined || c.AttrsOr !== undefined;
      if (hasTags && hasAttrs) return fail(90039, 'tag and attribute conditions cannot be mixed');
      if (!hasTags && !hasAttrs) return fail(90001, 'Condition names no tag or attribute');
      for (const key of ['TagsAnd', 'TagsOr'] as const) {
        if (c[key] === undefined) continue;
        if (!isStringArray(c[key])) return fail(90001, `${key} must be a list of strings`);
      }
      const and = (c.TagsAnd as string[] | undefined) ?? [];
      const or = (c.TagsOr as string[] | undefined) ?? [];
      const problem = tagsProblem([...and, ...or]);
      if (problem) return problem;
      if (and.some((t) => or.includes(t))) return fail(90022, 'a tag is in both TagsAnd and TagsOr');
      parsed = c as AllPushTask['condition'];
    }
    const now = this.now();
    const same = this.tasks.find((t) => t.sdkAppId === sdkAppId && t.msgRandom === msgRandom && now - t.receivedAtMs < DEDUP_MS);
    if (same) return ok({ TaskId: same.taskId });
    const last = this.lastPushMs.get(sdkAppId);
    if (last !== undefined && now - last < 1000) return fail(90024, 'pushes less than 1 s apart');
    const dayStart = Math.floor(now / 86_400_000) * 86_400_000;
    const today = this.tasks.filter((t) => t.sdkAppId === sdkAppId && t.receivedAtMs >= dayStart).length;
    if (today >= this.limits.perDay) return fail(90047, `the daily push count is over its limit (${this.limits.perDay})`);
    const task: AllPushTask = {
      taskId: `fake-task-${sdkAppId}-${this.nextTask++}`,
      sdkAppId,
      msgRandom,
      condition: parsed,
      offlinePushInfo: msg.OfflinePushInfo,
      receivedAtMs: now,
      revokedAtMs: null,
    };
    this.tasks.push(task);
    this.lastPushMs.set(sdkAppId, now);
    return ok({ TaskId: task.taskId });
  }

  /** `v4/timpush/revoke`: one task of this app, within 24 h, at most once a second, with its OfflinePushInfo. */
  revoke(sdkAppId: number, msg: Record<string, unknown>): Answer {
    const task = this.tasks.find((t) => t.sdkAppId === sdkAppId && t.taskId === msg.TaskId);
    if (!task) return fail(90049, 'TaskId is invalid (no such push)');
    if (task.revokedAtMs !== null) return fail(90050, 'the push was already revoked');
    const now = this.now();
    const last = this.lastRevokeMs.get(sdkAppId);
    if (last !== undefined && now - last < 1000) return fail(90051, 'revoke is called too often (1/s)');
    if (now - task.receivedAtMs > REVOKE_WINDOW_MS) return fail(90052, 'the revoke window (24 h) has passed');
    if (msg.OfflinePushInfo === undefined) return fail(90053, 'revoke needs the OfflinePushInfo of the task');
    task.revokedAtMs = now;
    this.lastRevokeMs.set(sdkAppId, now);
    return ok();
  }

  /** `add_tag` (Replace 0: add; 1: overwrite) and `remove_tag`: UserTags [{To_Account, Tags}], ≤ 100 users a call. */
  changeTags(sdkAppId: number, msg: Record<string, unknown>, op: 'add' | 'remove'): Answer {
    const userTags = msg.UserTags;
    if (!Array.isArray(userTags) || userTags.length === 0) return fail(90001, 'UserTags must be a non-empty list');
    if (userTags.length > MAX_USERS_PER_TAG_CALL) return fail(90018, `more than ${MAX_USERS_PER_TAG_CALL} users in one request`);
    for (const entry of userTags as Array<Record<string, unknown>>) {
      if (typeof entry?.To_Account !== 'string' || entry.To_Account === '') return fail(90001, 'To_Account is missing');
      if (!isStringArray(entry.Tags)) return fail(90001, 'Tags must be a list of strings');
      const problem = tagsProblem(entry.Tags);
      if (problem) return problem;
    }
    const app = this.tags.get(sdkAppId) ?? new Map<string, Set<string>>();
    const next = new Map([...app].map(([account, set]) => [account, new Set(set)]));
    for (const entry of userTags as Array<{ To_Account: string; Tags: string[] }>) {
      const current = next.get(entry.To_Account) ?? new Set<string>();
      if (op === 'remove') for (const t of entry.Tags) current.delete(t);
      else {
        if (msg.Replace === 1) current.clear();
        for (const t of entry.Tags) current.add(t);
      }
      if (current.size > MAX_TAGS_PER_USER) return fail(90032, `${entry.To_Account} would have more than ${MAX_TAGS_PER_USER} tags`);
      next.set(entry.To_Account, current);
    }
    const distinct = new Set([...next.values()].flatMap((s) => [...s]));
    if (distinct.size > MAX_TAGS_PER_APP) return fail(90032, `the app would have more than ${MAX_TAGS_PER_APP} distinct tags`);
    this.tags.set(sdkAppId, next);
    return ok();
  }

  /** The tags an account has in an app (for tests). */
  tagsOf(sdkAppId: number, account: string): string[] {
    return [...(this.tags.get(sdkAppId)?.get(account) ?? [])].sort();
  }
}
