import { describe, expect, it } from 'vitest';
import { configSchema } from '../src/composition/schema.ts';
import { outboxNoticeModules, mqNoticeModules } from '../src/notices/sources.ts';
import { renderOfflinePush, type RenderedPush } from '../src/tencent-im/offline-push.ts';
import type { MappedEvent } from '../src/notices/types.ts';

/**
 * The owner's `language` (offline_push.language_field) reaches the push template through every source, outbox and
 * MQ alike; hostile payload text neither breaks rendering nor reaches a lock screen as control characters.
 */
const config = configSchema.parse({ mysql: { url: 'mysql://x/y' }, redis: { url: 'redis://x' } });
const sources = Object.fromEntries(outboxNoticeModules(config).map((m) => [m.source.sourceName, m.source]));
const now = 1_800_000_000_000;

function pushOf(mapped: MappedEvent, eventId = 'e1'): RenderedPush {
  if (mapped.kind !== 'notice') throw new Error(`not a notice: ${JSON.stringify(mapped)}`);
  return renderOfflinePush(config.offline_push, {
    eventType: mapped.eventType,
    noticeKind: mapped.noticeKind,
    sourceEventId: eventId,
    payload: mapped.payload,
  });
}
const bodyOf = (r: RenderedPush) => (r.push ? `${r.info.Title} | ${r.info.Desc}` : `none: ${r.reason}`);

const vip = (language: unknown) => ({
  id: 1,
  app_code: 'lalu',
  event_id: 'w1',
  event_type: 'VipActivated',
  user_id: '10001',
  created_at_ms: now,
  payload: JSON.stringify({
    transaction_id: 't',
    command_id: 'c',
    source: 'vip_purchase',
    action: 'activate',
    previous_level: 0,
    level: 6,
    vip_name: 'VIP6',
    started_at_ms: now,
    expires_at_ms: now + 1,
    reward_resource_group_id: 1,
    resource_grant_id: 'g',
    reward_items: [],
    language,
  }),
});
const task = (language: unknown, extra: Record<string, unknown> = {}) => ({
  id: 2,
  app_code: 'lalu',
  event_id: 'a1',
  event_type: 'TaskCompleted',
  user_id: '60001',
  created_at_ms: now,
  payload: JSON.stringify({ task_id: 't', progress: 1, target: 1, language, ...extra }),
});
const kick = (language: unknown) => ({
  event_id: 'r1',
  event_type: 'RoomUserKicked',
  app_code: 'lalu',
  room_id: 'r9',
  payload: { target_user_id: '42', operator_user_id: '7', reason: 'spam', language },
  created_at_ms: now,
});

describe('the push is in the language of the fact', () => {
  it('wallet (VipActivated), activity and room (outbox and MQ): zh gets the zh template, en and unknown the default', () => {
    expect(bodyOf(pushOf(sources.wallet_outbox!.map(vip('zh'), now)))).toBe('VIP VIP6 | 你的 VIP 等级已变为 6。');
    expect(bodyOf(pushOf(sources.wallet_outbox!.map(vip('en'), now)))).toBe('VIP VIP6 | Your VIP level is now 6.');
    expect(bodyOf(pushOf(sources.activity_outbox!.map(task('zh'), now)))).toBe('活动 | 你有一条新的活动通知。');
    expect(bodyOf(pushOf(sources.activity_outbox!.map(task('fr'), now)))).toBe('Activity | You have a new activity notice.');
    expect(bodyOf(pushOf(sources.room_outbox!.map({ id: 3, ...kick('zh'), payload: JSON.stringify(kick('zh').payload) }, now)))).toBe(
      '房间 | 你有一条新的房间通知。',
    );
    const mq = mqNoticeModules(config)[0]!.parse(Buffer.from(JSON.stringify(kick('zh'))), now);
    expect(mq.kind).toBe('fact');
    if (mq.kind === 'fact') expect(bodyOf(pushOf(mq.fact.mapped))).toBe('房间 | 你有一条新的房间通知。');
  });

  it('reads the field offline_push.language_field names', () => {
    const custom = configSchema.parse({ mysql: { url: 'mysql://x/y' }, redis: { url: 'redis://x' }, offline_push: { language_field: 'locale' } });
    const source = outboxNoticeModules(custom).find((m) => m.source.sourceName === 'activity_outbox')!.source;
    const mapped = source.map(task(undefined, { locale: 'zh' }), now);
    if (mapped.kind !== 'notice') throw new Error('not a notice');
    expect(JSON.parse(mapped.payload).locale).toBe('zh');
    expect(renderOfflinePush(custom.offline_push, { ...mapped, sourceEventId: 'a1' })).toMatchObject({ push: true, info: { Title: '活动' } });
  });

  it('a language of "constructor", "__proto__" or markup renders the default; control and bidi characters never reach the phone', () => {
    for (const language of ['constructor', '__proto__', 'toString', '<b>zh</b>', 42, { zh: 1 }]) {
      expect(bodyOf(pushOf(sources.activity_outbox!.map(task(language), now)))).toBe('Activity | You have a new activity notice.');
    }
    // The rendering itself, over a payload that already carries such values (an old ledger row, a hand-made one).
    const rendered = renderOfflinePush(config.offline_push, {
      eventType: 'VipActivated',
      noticeKind: 'vip_notice',
      sourceEventId: 'x',
      payload: JSON.stringify({ language: 'constructor', vip_name: 'gold\u202Eevil\u0007\u200F', level: 'x\u0000y' }),
    });
    expect(bodyOf(rendered)).toBe('VIP goldevil | Your VIP level is now xy.');
    const hostileTemplate = configSchema.parse({
      mysql: { url: 'mysql://x/y' },
      redis: { url: 'redis://x' },
      offline_push: { templates: { vip_notice: { en: { title: '{{constructor}}{{__proto__}}', body: '{{toString}}!' } } } },
    });
    expect(
      bodyOf(renderOfflinePush(hostileTemplate.offline_push, { eventType: 'VipActivated', noticeKind: 'vip_notice', sourceEventId: 'x', payload: '{}' })),
    ).toBe(' | !');
  });
});
