import { describe, expect, it } from 'vitest';
import type { DeliveryChannel } from '../src/channels/types.ts';
import { DECISIONS, withDecisions, type Decision, type DecisionContext } from '../src/delivery/wrappers/decisions.ts';

describe('the decisions around a send', () => {
  it('are one list, outermost first, in the order the delivery core promises', () => {
    expect(DECISIONS.map((d) => d.name)).toEqual([
      'expire-stale',
      'respect-preferences',
      'respect-quiet-hours',
      'skip-superseded',
      'gather-digest',
      'escalate-if-unread',
    ]);
  });

  it('withDecisions puts the first decision outermost: a row meets them in list order, then the sender', async () => {
    const met: string[] = [];
    const sender: DeliveryChannel = {
      name: 'probe',
      send: async () => {
        met.push('sender');
        return { kind: 'delivered', ref: 'r', latencyMs: 0 };
      },
    };
    const recording = (name: string): Decision => ({
      name,
      wrap: (inner) => ({
        ...inner,
        send: async (row, ctx) => {
          met.push(name);
          return inner.send(row, ctx);
        },
      }),
    });
    const channel = withDecisions(sender, {} as DecisionContext, [recording('a'), recording('b'), recording('c')]);
    await channel.send({} as never, { lockUntilMs: null });
    expect(met).toEqual(['a', 'b', 'c', 'sender']);
  });
});
