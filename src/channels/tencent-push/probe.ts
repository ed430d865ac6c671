import type { ChannelProbe } from '../types.ts';

/** Conformance probe: what reached fake-im's timpush/batch, and its push faults. */
export const tencentPushProbe: ChannelProbe = {
  config: { tencent_push: { enabled: true, batch_linger: '0ms' } },
  kind: 'activity_notice',
  // Every trial has its own fake-im and each row its own user, so the pushes to the row's user are its copies.
  async seen({ fakeIm }, row) {
    return fakeIm
      .pushes()
      .filter((p) => !p.duplicate && p.accounts.includes(row.userId))
      .map(() => row.userId);
  },
  resend: 'unconfirmed',
  async outage({ fakeIm }) {
    fakeIm.setPushFaults({ http_errors: 1_000_000 });
    return async () => fakeIm.setPushFaults({});
  },
  refusedRow({ fakeIm }, row) {
    fakeIm.setPushFaults({ not_imported: ['never-imported'] });
    return { ...row, userId: 'never-imported' };
  },
};
