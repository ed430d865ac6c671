import { FakeAllPush, type AllPushTask } from './all-push.ts';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { crc32 } from 'node:zlib';
import { verifyUserSig } from './usersig-verify.ts';

/**
 * A local stand-in for Tencent IM's REST API (`v4/openim/sendmsg`, TIMPush's `v4/timpush/batch`, and its all-user and
 * tag push with recall and tags: src/fake-im/all-push.ts), for
 * development, demos and tests. It validates requests like Tencent, answers in Tencent's shape, keeps Tencent's
 * duplicate filters (sendmsg: 120 s; push: MsgRandom within one second), records what it received, and injects
 * faults on request, per API (`POST /_fake/faults`, `POST /_fake/push-faults`).
 */
export interface FakeImApp {
  sdkAppId: number;
  secretKey: string;
  adminIdentifier: string;
}

export interface FakeImOptions extends FakeImApp {
  /** More Tencent apps served by the same fake, each verifying its own UserSig (one deployment for many apps). */
  apps?: FakeImApp[];
  now?: () => number;
  /** All-user and tag pushes per app per day (`v4/timpush/push`, 90047 beyond): 10 free, 100 standard. */
  allPushPerDay?: number;
}

export interface ReceivedMessage {
  /** The Tencent app (SDKAppID) it was sent through. */
  sdkAppId: number;
  toAccount: string;
  ext: string;
  data: string;
  msgRandom: number;
  msgSeq: number;
  msgKey: string;
  receivedAtMs: number;
  /** True when Tencent's duplicate filter would have dropped it (same sender, MsgSeq, MsgRandom, content within 120 s). */
  duplicate: boolean;
  /** The message's OfflinePushInfo, when it carried one. */
  offlinePush?: Record<string, unknown>;
  /** MsgLifeTime (seconds Tencent keeps it for an offline user), when given. */
  msgLifeTime?: number;
  /** Taken back by admin_msgwithdraw (the recipient no longer sees it). */
  withdrawn?: boolean;
}

/** One accepted admin_set_msg_read: the messages sent before `readBeforeSec` (seconds) are read. */
export interface ReadMark {
  sdkAppId: number;
  reportAccount: string;
  peerAccount: string;
  receivedAtMs: number;
  readBeforeSec: number;
}

/** One accepted `v4/timpush/batch` call. */
export interface ReceivedPush {
  taskId: string;
  dataId: string;
  msgRandom: number;
  /** The Tencent app (SDKAppID) it was pushed through. */
  sdkAppId: number;
  /** The accounts it was pushed to (those in ErrorList left out). */
  accounts: string[];
  /** The accounts the call named that were answered in ErrorList instead. */
  refused: string[];
  offlinePush: Record<string, unknown>;
  /** OfflineStorageTime (s), when given. */
  offlineStorageTime?: number;
  receivedAtMs: number;
  /** True when Tencent would have dropped it: the same MsgRandom within the same second. */
  duplicate: boolean;
}

export interface Faults {
  /** The next `count` sends (to `to_account` if given) are answered with this ErrorCode; `{url}` in `info` is replaced by the request's path and query (a hostile provider echoing the URL). */
  errors?: Array<{ code: number; count: number; to_account?: string; info?: string }>;
  /** The next n requests get HTTP 502. */
  http_errors?: number;
  /** The next n requests have their connection destroyed without an answer. */
  drop_connections?: number;
  /** Every answer waits this long (the request is received, counted and recorded on arrival). */
  delay_ms?: number;
  /** Answer 60007 beyond this many sends in any one-second window (0 = off). */
  rate_limit_per_second?: number;
  /** Count rejected calls in that window too, as a real gateway does: one burst over the limit keeps refusing. */
  rate_limit_counts_rejected?: boolean;
  /** Accounts that were never imported (answered 90012). */
  not_imported?: string[];
  /** Random faults by probability 0..1, for soak runs. */
  transient_error_rate?: number;
  timeout_rate?: number;
  /** The next n requests wait `timeout_ms` before their answer: a timeout a test can count on. */
  timeouts?: number;
  timeout_ms?: number;
  reset_rate?: number;
  /** Process (and record) the request, then cut the connection before answering: a send that may have worked. */
  reset_after_processing_rate?: number;
}

const MAX_PUSH_ACCOUNTS = 500;

const DEDUP_WINDOW_MS = 120_000;
const MAX_MESSAGE_BYTES = 12 * 1024;

/** TIMPush's all-user/tag push, its recall and the user tags (src/fake-im/all-push.ts), by path. */
const ALL_PUSH_CALLS: Record<string, (push: FakeAllPush, sdkAppId: number, body: string, msg: Record<string, unknown>) => Record<string, unknown>> = {
  '/v4/timpush/push': (push, app, body, msg) => push.push(app, body, msg),
  '/v4/timpush/revoke': (push, app, _body, msg) => push.revoke(app, msg),
  '/v4/timpush/add_tag': (push, app, _body, msg) => push.changeTags(app, msg, 'add'),
  '/v4/timpush/remove_tag': (push, app, _body, msg) => push.changeTags(app, msg, 'remove'),
};

export class FakeImServer {
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private faults: ActiveFaults = FakeImServer.noFaults();
  private pushFaults: ActiveFaults = FakeImServer.noFaults();
  private pushed: ReceivedPush[] = [];
  private pushTimes: number[] = [];
  private pushSeen = new Map<string, number>();
  private pushStats = { requests: 0, by_code: {} as Record<string, number>, dropped: 0, http_errors: 0 };
  private readStats = { requests: 0, by_code: {} as Record<string, number>, dropped: 0, http_errors: 0 };
  private readFaults: ActiveFaults = FakeImServer.noFaults();
  private withdrawCalls: Array<{ toAccount: string; msgKey: string; receivedAtMs: number }> = [];
  private readMarks: ReadMark[] = [];
  private readonly now: () => number;
  private received: ReceivedMessage[] = [];
  private dedup = new Map<string, { msgKey: string; atMs: number }>();
  /** Per SDKAppID: a Tencent quota is each app's own. */
  private sendTimes = new Map<number, number[]>();
  private appStats = new Map<number, { requests: number; rate_limited: number }>();
  private stats = { requests: 0, by_code: {} as Record<string, number>, max_per_second: 0, http_errors: 0, dropped: 0 };
  /** Sends per `<SDKAppID>:<second>`: the per-app peak a quota test reads. */
  private windowCounts = new Map<string, number>();
  private seq = 0;
  private readonly verifiedSigs = new Map<string, number>();
  private allPush: FakeAllPush;

  constructor(private readonly options: FakeImOptions) {
    this.now = options.now ?? Date.now;
    this.allPush = new FakeAllPush({ perDay: options.allPushPerDay ?? 100 }, this.now);
    this.server = http.createServer((req, res) => void this.route(req, res));
    this.server.keepAliveTimeout = 30_000;
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static noFaults() {
    return {
      errors: [],
      http_errors: 0,
      drop_connections: 0,
      delay_ms: 0,
      rate_limit_per_second: 0,
      rate_limit_counts_rejected: false,
      not_imported: [],
      transient_error_rate: 0,
      timeout_rate: 0,
      timeouts: 0,
      timeout_ms: 10_000,
      reset_rate: 0,
      reset_after_processing_rate: 0,
    };
  }

  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    const address = this.server.address() as AddressInfo;
    return `http://${host}:${address.port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  setFaults(faults: Faults): void {
    this.faults = { ...FakeImServer.noFaults(), ...faults, errors: (faults.errors ?? []).map((e) => ({ ...e })) };
  }

  /** Faults for `v4/timpush/batch` only, so one API can fail while the other is healthy. */
  setPushFaults(faults: Faults): void {
    this.pushFaults = { ...FakeImServer.noFaults(), ...faults, errors: (faults.errors ?? []).map((e) => ({ ...e })) };
  }

  /** Every accepted push call, duplicates included (see `duplicate`). */
  pushes(): ReceivedPush[] {
    return this.pushed;
  }

  getPushStats() {
    return { ...this.pushStats, calls: this.pushed.length, accounts: this.pushed.filter((p) => !p.duplicate).reduce((n, p) => n + p.accounts.length, 0) };
  }

  /** The all-user and tag pushes accepted so far (one task per MsgRandom), and an account's tags. */
  allPushTasks(): AllPushTask[] {
    return this.allPush.tasks;
  }

  tagsOf(sdkAppId: number, account: string): string[] {
    return this.allPush.tagsOf(sdkAppId, account);
  }

  reset(): void {
    this.allPush = new FakeAllPush({ perDay: this.options.allPushPerDay ?? 100 }, this.now);
    this.faults = FakeImServer.noFaults();
    this.pushFaults = FakeImServer.noFaults();
    this.readFaults = FakeImServer.noFaults();
    this.readMarks = [];
    this.withdrawCalls = [];
    this.pushed = [];
    this.pushTimes = [];
    this.pushSeen.clear();
    this.pushStats = { requests: 0, by_code: {}, dropped: 0, http_errors: 0 };
    this.received = [];
    this.dedup.clear();
    this.sendTimes.clear();
    this.appStats.clear();
    this.windowCounts.clear();
    this.stats = { requests: 0, by_code: {}, max_per_second: 0, http_errors: 0, dropped: 0 };
  }

  messages(): ReceivedMessage[] {
    return this.received;
  }

  /** Messages a user would see: duplicates dropped. */
  delivered(): ReceivedMessage[] {
    return this.received.filter((m) => !m.duplicate);
  }

  getStats() {
    return {
      ...this.stats,
      by_app: Object.fromEntries(this.appStats),
      received: this.received.length,
      delivered: this.delivered().length,
      duplicates: this.received.length - this.delivered().length,
    };
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake-im');
    const body = await readBody(req);
    if (url.pathname === '/v4/openim/sendmsg' && req.method === 'POST') return this.sendmsg(url, body, req, res);
    if (url.pathname === '/v4/timpush/batch' && req.method === 'POST') return this.pushBatch(url, body, req, res);
    const allPushCall = ALL_PUSH_CALLS[url.pathname];
    if (allPushCall && req.method === 'POST') {
      this.pushStats.requests++;
      return this.answerWithFaults(this.pushFaults, this.pushStats, req, res, () => {
        const request = this.adminRequest(url, body, []);
        if ('failed' in request) return request.failed;
        return allPushCall(this.allPush, request.checked.app.sdkAppId, body, request.msg);
      });
    }
    if (url.pathname === '/_fake/all-pushes' && req.method === 'GET') return json(res, 200, { tasks: this.allPush.tasks });
    if (url.pathname === '/v4/openim/admin_msgwithdraw' && req.method === 'POST') {
      this.stats.requests++;
      return this.answerWithFaults(this.faults, this.stats, req, res, () => this.answerWithdraw(url, body));
    }
    if (url.pathname === '/v4/openim/admin_set_msg_read' && req.method === 'POST') {
      this.readStats.requests++;
      return this.answerWithFaults(this.readFaults, this.readStats, req, res, () => this.answerSetMsgRead(url, body));
    }
    if (url.pathname === '/_fake/pushes' && req.method === 'GET') return json(res, 200, { pushes: this.pushed, stats: this.getPushStats() });
    if (url.pathname === '/_fake/push-faults' && req.method === 'POST') {
      try {
        this.setPushFaults(JSON.parse(body || '{}') as Faults);
        return json(res, 200, { ok: true, faults: this.pushFaults });
      } catch {
        return json(res, 400, { error: 'faults body must be JSON' });
      }
    }
    if (url.pathname === '/_fake/messages' && req.method === 'GET') {
      const to = url.searchParams.get('to_account');
      const list = this.received.filter((m) => !to || m.toAccount === to);
      return json(res, 200, { messages: list });
    }
    if (url.pathname === '/_fake/stats' && req.method === 'GET') return json(res, 200, this.getStats());
    if (url.pathname === '/_fake/faults' && req.method === 'POST') {
      try {
        this.setFaults(JSON.parse(body || '{}') as Faults);
        return json(res, 200, { ok: true, faults: this.faults });
      } catch {
        return json(res, 400, { error: 'faults body must be JSON' });
      }
    }
    if (url.pathname === '/_fake/reset' && req.method === 'POST') {
      this.reset();
      return json(res, 200, { ok: true });
    }
    if (url.pathname === '/healthz') return json(res, 200, { ok: true });
    return json(res, 404, { ActionStatus: 'FAIL', ErrorCode: 60009, ErrorInfo: 'unknown resource path' });
  }

  private async sendmsg(url: URL, body: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.stats.requests++;
    await this.answerWithFaults(this.faults, this.stats, req, res, () => this.answerSendmsg(url, body));
  }

  private async pushBatch(url: URL, body: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.pushStats.requests++;
    await this.answerWithFaults(this.pushFaults, this.pushStats, req, res, () => this.answerPush(url, body));
  }

  /** The transport faults both APIs share, around the API's own answer. */
  private async answerWithFaults(
    f: ActiveFaults,
    stats: { by_code: Record<string, number>; dropped: number; http_errors: number },
    req: http.IncomingMessage,
    res: http.ServerResponse,
    answerOf: () => Record<string, unknown>,
  ): Promise<void> {
    if (f.drop_connections > 0 || Math.random() < f.reset_rate) {
      if (f.drop_connections > 0) f.drop_connections--;
      stats.dropped++;
      req.socket.destroy();
      return;
    }
    if (f.http_errors > 0) {
      f.http_errors--;
      stats.http_errors++;
      res.writeHead(502, { 'content-type': 'text/html' }).end('<html>502 Bad Gateway</html>');
      return;
    }
    if (f.timeouts > 0) {
      f.timeouts--;
      await sleep(f.timeout_ms);
    } else if (Math.random() < f.timeout_rate) await sleep(f.timeout_ms);
    // Counted (rate limit, receive time) on arrival, like Tencent's gateway; only the answer waits out the latency.
    // Stamping after a timer instead would add this process's timer lateness to every arrival time.
    const answer = answerOf();
    stats.by_code[String(answer.ErrorCode)] = (stats.by_code[String(answer.ErrorCode)] ?? 0) + 1;
    if (Math.random() < f.reset_after_processing_rate) {
      stats.dropped++;
      req.socket.destroy();
      return;
    }
    if (f.delay_ms > 0) await sleep(f.delay_ms);
    json(res, 200, answer);
  }

  /** The query-string checks every REST call gets: content type, app, admin identifier and its UserSig; the app on success. */
  private checkAdmin(url: URL): { denied: { code: number; info: string } } | { app: FakeImApp } {
    const q = url.searchParams;
    if (q.get('contenttype') !== 'json') return { denied: { code: 60025, info: 'contenttype must be json' } };
    const app = [this.options, ...(this.options.apps ?? [])].find((a) => q.get('sdkappid') === String(a.sdkAppId));
    if (!app) return { denied: { code: 70014, info: 'sdkappid does not match' } };
    const random = Number(q.get('random'));
    if (!Number.isInteger(random) || random < 0 || random > 4294967295) return { denied: { code: 60025, info: 'random must be a uint32' } };
    if (q.get('identifier') !== app.adminIdentifier) return { denied: { code: 60010, info: 'identifier is not an App admin' } };
    const sig = q.get('usersig') ?? '';
    const cacheKey = `${app.sdkAppId}|${sig}`;
    const verifiedUntil = this.verifiedSigs.get(cacheKey);
    if (verifiedUntil === undefined || verifiedUntil < this.now()) {
      const sigCheck = verifyUserSig(sig, { sdkAppId: app.sdkAppId, identifier: app.adminIdentifier, secretKey: app.secretKey, nowMs: this.now() });
      if (!sigCheck.ok) return { denied: { code: sigCheck.code, info: sigCheck.info } };
      // A sig that verified stays good until it expires; re-checking it per request only costs CPU.
      if (this.verifiedSigs.size > 100) this.verifiedSigs.clear();
      this.verifiedSigs.set(cacheKey, sigCheck.expiresAtMs);
    }
    return { app };
  }

  /** An admin call's checks (query string, JSON body, required string fields), or its FAIL answer. */
  private adminRequest(
    url: URL,
    body: string,
    fields: readonly string[],
  ): { failed: Record<string, unknown> } | { checked: { app: FakeImApp }; msg: Record<string, unknown> } {
    const checked = this.checkAdmin(url);
    if ('denied' in checked) return { failed: answerFail(checked.denied.code, checked.denied.info) };
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return { failed: answerFail(90001, 'the body is not JSON') };
    }
    for (const field of fields)
      if (typeof msg[field] !== 'string' || msg[field] === '') return { failed: answerFail(90001, `${field} is missing or not a string`) };
    return { checked, msg };
  }

  /**
   * admin_set_msg_read: Report_Account read the C2C conversation with Peer_Account (the admin's notices): the messages
   * before MsgReadTime (seconds, a string), or before now when it is absent — as Tencent documents it.
   */
  private answerSetMsgRead(url: URL, body: string): Record<string, unknown> {
    const request = this.adminRequest(url, body, ['Report_Account', 'Peer_Account']);
    if ('failed' in request) return request.failed;
    const { checked, msg } = request;
    if (this.faults.not_imported.includes(msg.Report_Account as string)) return answerFail(70107, 'account does not exist');
    const readTime = msg.MsgReadTime;
    if (readTime !== undefined && (typeof readTime !== 'string' || !/^[0-9]{1,12}$/.test(readTime)))
      return answerFail(90001, 'MsgReadTime must be a timestamp in seconds, as a string');
    const receivedAtMs = this.now();
    this.readMarks.push({
      sdkAppId: checked.app.sdkAppId,
      reportAccount: msg.Report_Account as string,
      peerAccount: msg.Peer_Account as string,
      receivedAtMs,
      readBeforeSec: readTime === undefined ? Math.floor(receivedAtMs / 1000) + 1 : Number(readTime),
    });
    return { ActionStatus: 'OK', ErrorCode: 0, ErrorInfo: '' };
  }

  /** admin_msgwithdraw: the admin takes back a C2C message it sent, found by MsgKey between the two accounts. */
  private answerWithdraw(url: URL, body: string): Record<string, unknown> {
    const request = this.adminRequest(url, body, ['From_Account', 'To_Account', 'MsgKey']);
    if ('failed' in request) return request.failed;
    const { checked, msg } = request;
    this.withdrawCalls.push({ toAccount: msg.To_Account as string, msgKey: msg.MsgKey as string, receivedAtMs: this.now() });
    const found = this.received.filter((m) => !m.duplicate && m.sdkAppId === checked.app.sdkAppId && m.msgKey === msg.MsgKey && m.toAccount === msg.To_Account);
    // The code for an unknown or already withdrawn message is assumed (the reference lists none for this API).
    if (found.length === 0) return answerFail(20022, 'no such message between these accounts');
    if (found.every((m) => m.withdrawn)) return answerFail(20022, 'the message was already withdrawn');
    for (const m of found) m.withdrawn = true;
    return { ActionStatus: 'OK', ErrorCode: 0, ErrorInfo: '' };
  }

  /** Every admin_msgwithdraw call (answered OK or not). */
  withdrawals(): ReadonlyArray<{ toAccount: string; msgKey: string; receivedAtMs: number }> {
    return this.withdrawCalls;
  }

  /** The admin_set_msg_read calls that succeeded. */
  readMarksReceived(): ReadonlyArray<ReadMark> {
    return this.readMarks;
  }

  /** The IM badge of an account's conversation with the admin: messages to it not withdrawn, not before a read mark. */
  imUnread(account: string): number {
    const readBefore = Math.max(0, ...this.readMarks.filter((m) => m.reportAccount === account).map((m) => m.readBeforeSec));
    return this.received.filter((m) => m.toAccount === account && !m.duplicate && !m.withdrawn && Math.floor(m.receivedAtMs / 1000) >= readBefore).length;
  }

  getReadStats() {
    return { ...this.readStats };
  }

  /** Faults for admin_set_msg_read (the inbox's read sync), apart from sendmsg's and the push's. */
  setReadFaults(faults: Faults): void {
    this.readFaults = { ...FakeImServer.noFaults(), ...faults, errors: (faults.errors ?? []).map((e) => ({ ...e })) };
  }

  private answerPush(url: URL, body: string): Record<string, unknown> {
    const fail = (code: number, info: string) => ({ ActionStatus: 'FAIL', ErrorCode: code, ErrorInfo: info, TaskId: '' });
    const checked = this.checkAdmin(url);
    if ('denied' in checked) return fail(checked.denied.code, checked.denied.info);
    const app = checked.app;
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return fail(90001, 'JSON parse error');
    }
    if (typeof msg.From_Account !== 'string' || msg.From_Account === '') return fail(90001, 'From_Account is missing or not a string');
    const to = msg.To_Account;
    if (!Array.isArray(to) || to.length === 0 || !to.every((a) => typeof a === 'string' && a !== ''))
      return fail(90001, 'To_Account must be a non-empty array of account strings');
    if (to.length > MAX_PUSH_ACCOUNTS) return fail(90018, `To_Account has ${to.length} accounts; at most ${MAX_PUSH_ACCOUNTS}`);
    if (!Number.isInteger(msg.MsgRandom) || (msg.MsgRandom as number) < 0 || (msg.MsgRandom as number) > 4294967295)
      return fail(90005, 'MsgRandom is missing or not an integer');
    const info = msg.OfflinePushInfo as Record<string, unknown> | undefined;
    if (!info || typeof info !== 'object' || Array.isArray(info)) return fail(90001, 'OfflinePushInfo is required');
    for (const field of ['Title', 'Desc', 'Ext'])
      if (info[field] !== undefined && typeof info[field] !== 'string') return fail(90001, `OfflinePushInfo.${field} must be a string`);
    if (info.Ext !== undefined) {
      try {
        JSON.parse(info.Ext as string);
      } catch {
        return fail(90001, 'OfflinePushInfo.Ext must be JSON text');
      }
    }
    // The range is assumed (IM's MsgLifeTime allows 0-7 days); the code is Tencent's "bad offline storage time".
    const storage = msg.OfflineStorageTime;
    if (storage !== undefined && (!Number.isInteger(storage) || (storage as number) < 0 || (storage as number) > 604_800))
      return fail(90026, 'OfflineStorageTime must be whole seconds from 0 to 604800');
    const dataId = msg.DataId === undefined ? '' : msg.DataId;
    if (typeof dataId !== 'string' || Buffer.byteLength(dataId) > 64) return fail(90057, 'DataId is longer than 64 bytes');

    const nowMs = this.now();
    const f = this.pushFaults;
    const wholeCall = f.errors.find((e) => e.count > 0 && !e.to_account);
    if (wholeCall) {
      wholeCall.count--;
      return fail(wholeCall.code, echoUrl(wholeCall.info ?? `injected error ${wholeCall.code}`, url));
    }
    if (Math.random() < f.transient_error_rate) return fail(91000, 'internal error, retry (injected)');
    if (f.rate_limit_per_second > 0) {
      this.pushTimes = this.pushTimes.filter((t) => t > nowMs - 1000);
      const over = this.pushTimes.length >= f.rate_limit_per_second;
      if (!over || f.rate_limit_counts_rejected) this.pushTimes.push(nowMs);
      if (over) return fail(60007, 'REST API call frequency exceeds limit');
    }
    const errorList: Array<{ To_Account: string; ErrorCode: number; ErrorInfo: string }> = [];
    const accounts: string[] = [];
    for (const account of to as string[]) {
      const perAccount = f.errors.find((e) => e.count > 0 && e.to_account === account);
      if (perAccount) {
        perAccount.count--;
        errorList.push({ To_Account: account, ErrorCode: perAccount.code, ErrorInfo: echoUrl(perAccount.info ?? `injected error ${perAccount.code}`, url) });
      } else if (f.not_imported.includes(account)) errorList.push({ To_Account: account, ErrorCode: 70107, ErrorInfo: 'account does not exist' });
      else accounts.push(account);
    }
    // Tencent dedups MsgRandom only within the same second.
    const dedupKey = `${Math.floor(nowMs / 1000)}|${msg.MsgRandom}`;
    const duplicate = this.pushSeen.has(dedupKey);
    if (this.pushSeen.size > 100_000) this.pushSeen.clear();
    this.pushSeen.set(dedupKey, nowMs);
    const taskId = `batch_${(nowMs / 1000).toString(16).slice(0, 8)}_${(++this.seq).toString(16).padStart(8, '0')}_${app.sdkAppId.toString(16)}`;
    this.pushed.push({
      sdkAppId: app.sdkAppId,
      taskId,
      dataId,
      msgRandom: msg.MsgRandom as number,
      accounts,
      refused: errorList.map((e) => e.To_Account),
      offlinePush: info,
      ...(typeof storage === 'number' ? { offlineStorageTime: storage } : {}),
      receivedAtMs: nowMs,
      duplicate,
    });
    return { ActionStatus: 'OK', ErrorCode: 0, ErrorInfo: '', TaskId: taskId, ...(errorList.length > 0 ? { ErrorList: errorList } : {}) };
  }

  private answerSendmsg(url: URL, body: string): Record<string, unknown> {
    const fail = (code: number, info: string) => ({ ActionStatus: 'FAIL', ErrorCode: code, ErrorInfo: info });
    const checked = this.checkAdmin(url);
    if ('denied' in checked) return fail(checked.denied.code, checked.denied.info);
    const app = checked.app;

    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return fail(90001, 'JSON parse error');
    }
    if (typeof msg.To_Account !== 'string' || msg.To_Account === '') return fail(90002, 'To_Account is missing or not a string');
    if (!Number.isInteger(msg.MsgRandom)) return fail(90005, 'MsgRandom is missing or not an integer');
    if (!Array.isArray(msg.MsgBody)) return fail(90007, 'MsgBody is not an array');
    const custom = msg.MsgBody.filter((e: { MsgType?: string }) => e?.MsgType === 'TIMCustomElem');
    if (msg.MsgBody.length !== 1 || custom.length !== 1) return fail(90010, 'expected exactly one TIMCustomElem');
    const content = (custom[0] as { MsgContent?: Record<string, unknown> }).MsgContent ?? {};
    for (const field of ['Data', 'Desc', 'Ext', 'Sound']) {
      if (content[field] !== undefined && typeof content[field] !== 'string') return fail(90010, `MsgContent.${field} must be a string`);
    }
    const data = String(content.Data ?? '');
    const ext = String(content.Ext ?? '');
    const push = msg.OfflinePushInfo as Record<string, unknown> | undefined;
    if (push !== undefined) {
      if (!push || typeof push !== 'object' || Array.isArray(push)) return fail(90043, 'OfflinePushInfo must be an object');
      if (push.PushFlag !== undefined && push.PushFlag !== 0 && push.PushFlag !== 1) return fail(90043, 'OfflinePushInfo.PushFlag must be 0 or 1');
      for (const field of ['Title', 'Desc', 'Ext'])
        if (push[field] !== undefined && typeof push[field] !== 'string') return fail(90043, `OfflinePushInfo.${field} must be a string`);
    }
    const pushBytes = push ? ['Title', 'Desc', 'Ext'].reduce((n, k) => n + Buffer.byteLength(String(push[k] ?? '')), 0) : 0;
    const size = Buffer.byteLength(data) + Buffer.byteLength(ext) + Buffer.byteLength(String(content.Desc ?? '')) + pushBytes;
    if (size > MAX_MESSAGE_BYTES) return fail(80002, 'message is longer than 12 KB');

    const nowMs = this.now();
    const injected = this.takeInjectedError(msg.To_Account);
    if (injected) return fail(injected.code, echoUrl(injected.info ?? `injected error ${injected.code}`, url));
    if (Math.random() < this.faults.transient_error_rate) return fail(70500, 'internal server error (injected)');
    const appStats = this.appStats.get(app.sdkAppId) ?? { requests: 0, rate_limited: 0 };
    this.appStats.set(app.sdkAppId, appStats);
    appStats.requests++;
    if (this.faults.rate_limit_per_second > 0) {
      const times = (this.sendTimes.get(app.sdkAppId) ?? []).filter((t) => t > nowMs - 1000);
      this.sendTimes.set(app.sdkAppId, times);
      const over = times.length >= this.faults.rate_limit_per_second;
      if (!over || this.faults.rate_limit_counts_rejected) times.push(nowMs);
      if (over) {
        appStats.rate_limited++;
        return fail(60007, 'REST API call frequency exceeds limit');
      }
    }
    if (this.faults.not_imported.includes(msg.To_Account)) return fail(90012, 'To_Account does not exist or is not imported');

    const appSecond = `${app.sdkAppId}:${Math.floor(nowMs / 1000)}`;
    const inWindow = (this.windowCounts.get(appSecond) ?? 0) + 1;
    this.windowCounts.set(appSecond, inWindow);
    this.stats.max_per_second = Math.max(this.stats.max_per_second, inWindow);

    const msgSeq = Number.isInteger(msg.MsgSeq) ? (msg.MsgSeq as number) : 0;
    const dedupKey = `${app.sdkAppId}|${app.adminIdentifier}|${msgSeq}|${msg.MsgRandom}|${crc32(JSON.stringify(msg.MsgBody))}`;
    const seen = this.dedup.get(dedupKey);
    const duplicate = seen !== undefined && nowMs - seen.atMs < DEDUP_WINDOW_MS;
    const msgKey = duplicate ? seen.msgKey : `${app.sdkAppId}_${++this.seq}_${Math.floor(nowMs / 1000)}`;
    if (!duplicate) this.dedup.set(dedupKey, { msgKey, atMs: nowMs });
    this.received.push({
      sdkAppId: app.sdkAppId,
      toAccount: msg.To_Account,
      ext,
      data,
      msgRandom: msg.MsgRandom as number,
      msgSeq,
      msgKey,
      receivedAtMs: nowMs,
      duplicate,
      ...(push ? { offlinePush: push } : {}),
      ...(typeof msg.MsgLifeTime === 'number' ? { msgLifeTime: msg.MsgLifeTime } : {}),
    });
    return { ActionStatus: 'OK', ErrorCode: 0, ErrorInfo: '', MsgTime: Math.floor(nowMs / 1000), MsgKey: msgKey };
  }

  private takeInjectedError(toAccount: string) {
    const rule = this.faults.errors.find((e) => e.count > 0 && (!e.to_account || e.to_account === toAccount));
    if (!rule) return undefined;
    rule.count--;
    return rule;
  }
}

type ActiveFaults = Required<Omit<Faults, 'errors'>> & { errors: NonNullable<Faults['errors']> };

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function echoUrl(info: string, url: URL): string {
  return info.replace('{url}', `${url.pathname}${url.search}`);
}

function answerFail(code: number, info: string): Record<string, unknown> {
  return { ActionStatus: 'FAIL', ErrorCode: code, ErrorInfo: info };
}
