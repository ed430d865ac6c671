import type { ChannelProbe } from '../types.ts';

/** Conformance probe: what reached fake-im's sendmsg, and its faults. */
export const tencentImC2cProbe: ChannelProbe = {
  config: {},
  kind: 'room_notice',
  resend: 'delivered',
  async seen({ fakeIm }, row) {
    return fakeIm
      .messages()
      .filter((m) => !m.duplicate && JSON.parse(m.data).event_id === row.sourceEventId)
      .map((m) => m.toAccount);
  },
  async outage({ fakeIm }) {
    fakeIm.setFaults({ http_errors: 1_000_000 });
    return async () => fakeIm.setFaults({});
  },
  refusedRow({ fakeIm }, row) {
    fakeIm.setFaults({ not_imported: ['never-imported'] });
    return { ...row, userId: 'never-imported' };
  },
};
