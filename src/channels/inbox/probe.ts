import type { ChannelProbe } from '../types.ts';

/** Conformance probe: the items in notice_inbox_items; its provider is notice-service's own MySQL. */
export const inboxProbe: ChannelProbe = {
  config: { inbox: { enabled: true } },
  kind: 'activity_notice',
  resend: 'delivered',
  async seen({ owner, noticeDatabase }, row) {
    const [rows] = await owner.query(`SELECT user_id FROM \`${noticeDatabase}\`.notice_inbox_items WHERE source_event_id = ?`, [row.sourceEventId]);
    return (rows as Array<{ user_id: unknown }>).map((r) => String(r.user_id));
  },
  outage: ({ cutMysql }) => cutMysql(),
  refusedRow(_world, row) {
    // Longer than the item's user_id column: MySQL refuses the value itself.
    return { ...row, userId: 'u'.repeat(300) };
  },
};
