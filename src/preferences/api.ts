import type * as grpc from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { NoticeConfig } from '../config/schema.ts';
import { modulesOf } from '../modules/module-set.ts';
import { describeError } from '../platform/errors.ts';
import type { PreferenceStore } from './store.ts';
import type { QuietHoursStore } from '../quiet-hours/store.ts';
import { quietHoursHandlers } from '../quiet-hours/api.ts';
import { ownerOf, PreferenceRequestError } from './caller.ts';

export const PREFERENCES_PROTO = fileURLToPath(new URL('../../proto/notice/preferences/v1/preferences.proto', import.meta.url));

/** Which choices exist: every kind a source produces, on every channel that takes it; and which kinds are mandatory. */
export interface PreferenceGrid {
  pairs: ReadonlyArray<{ kind: string; channel: string }>;
  mandatory: ReadonlySet<string>;
}

export function preferenceGrid(config: NoticeConfig): PreferenceGrid {
  const { sources, channels } = modulesOf(config);
  const kinds = [...new Set(sources.flatMap((s) => s.noticeKinds))];
  const seen = new Set<string>();
  const pairs: Array<{ kind: string; channel: string }> = [];
  const add = (kind: string, channel: string) => {
    if (!seen.has(`${kind}\u0000${channel}`)) pairs.push({ kind, channel });
    seen.add(`${kind}\u0000${channel}`);
  };
  for (const c of channels) {
    const taken = c.kinds(config);
    for (const kind of kinds.filter((k) => taken.includes('*') || taken.includes(k))) {
      add(kind, c.name);
      // A channel whose messages can buzz the phone (C2C's offline push) offers the push choice for its kinds too.
      if (c.silencedBy) add(kind, c.silencedBy);
    }
  }
  return { pairs, mandatory: new Set(config.preferences.mandatory_kinds) };
}

const update = z.object({
  caller: z.unknown(),
  preferences: z
    .array(z.object({ notice_kind: z.string(), channel: z.string(), enabled: z.boolean() }), { error: 'preferences must be a list' })
    .max(100, 'preferences: at most 100 per call'),
});

/** The calls, over the store: validation, ownership (every statement is the caller's), mandatory kinds. */
export function preferenceHandlers(store: PreferenceStore, grid: PreferenceGrid, now: () => number = Date.now) {
  const known = new Set(grid.pairs.map((p) => `${p.kind}\u0000${p.channel}`));
  const present = async (owner: { appCode: string; userId: string }) => {
    const stored = new Map((await store.forUser(owner.appCode, owner.userId)).map((p) => [`${p.noticeKind}\u0000${p.channel}`, p.enabled]));
    return {
      preferences: grid.pairs.map((p) => ({
        notice_kind: p.kind,
        channel: p.channel,
        mandatory: grid.mandatory.has(p.kind),
        enabled: grid.mandatory.has(p.kind) || (stored.get(`${p.kind}\u0000${p.channel}`) ?? true),
      })),
    };
  };
  return {
    async GetPreferences(request: { caller?: unknown }) {
      return present(ownerOf(request.caller));
    },
    async UpdatePreferences(request: unknown) {
      const parsed = update.safeParse(request);
      if (!parsed.success) throw new PreferenceRequestError(parsed.error.issues.map((i) => i.message).join('; '));
      const owner = ownerOf(parsed.data.caller);
      for (const [i, p] of parsed.data.preferences.entries()) {
        if (!grid.pairs.some((g) => g.kind === p.notice_kind))
          throw new PreferenceRequestError(`preferences[${i}].notice_kind: unknown kind "${p.notice_kind.slice(0, 40)}"`);
        if (!known.has(`${p.notice_kind}\u0000${p.channel}`))
          throw new PreferenceRequestError(`preferences[${i}].channel: "${p.channel.slice(0, 40)}" does not carry ${p.notice_kind}`);
        if (!p.enabled && grid.mandatory.has(p.notice_kind))
          throw new PreferenceRequestError(`preferences[${i}]: ${p.notice_kind} is mandatory and cannot be turned off`, true);
      }
      await store.set(
        parsed.data.preferences.map((p) => ({ ...owner, noticeKind: p.notice_kind, channel: p.channel, enabled: p.enabled })),
        now(),
      );
      return present(owner);
    },
  };
}

/** Adds PreferencesService to the inbox API's server: the same listener, the same guard (mutual TLS beyond loopback). */
export async function addPreferencesService(
  server: grpc.Server,
  store: PreferenceStore,
  quiet: QuietHoursStore,
  grid: PreferenceGrid,
  logger: Logger,
): Promise<unknown> {
  const grpcJs = await import('@grpc/grpc-js');
  const protoLoader = await import('@grpc/proto-loader');
  const definition = await protoLoader.load(PREFERENCES_PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const pkg = grpcJs.loadPackageDefinition(definition) as unknown as {
    notice: { preferences: { v1: { PreferencesService: { service: grpc.ServiceDefinition } } } };
  };
  const handlers = { ...preferenceHandlers(store, grid), ...quietHoursHandlers(quiet) };
  const unary = Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => [
      name,
      (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
        (handler as (r: unknown) => Promise<unknown>)(call.request).then(
          (res) => callback(null, res),
          (err) => {
            if (err instanceof PreferenceRequestError)
              return callback({ code: err.precondition ? grpcJs.status.FAILED_PRECONDITION : grpcJs.status.INVALID_ARGUMENT, details: err.message });
            logger.warn({ method: name, err: describeError(err) }, 'preferences API call failed');
            callback({ code: grpcJs.status.UNAVAILABLE, details: 'preferences are unavailable; retry' });
          },
        );
      },
    ]),
  );
  server.addService(pkg.notice.preferences.v1.PreferencesService.service, unary);
  return definition;
}
