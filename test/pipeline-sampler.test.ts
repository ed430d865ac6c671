import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { createDeliverQueues } from '../queues/deliver-queue.ts';
import { channelQueueSpecs } from '../src/channels/channel-set.ts';
import { PipelineSampler } from '../dashboard/pipeline-sampler.ts';

let env: TestEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

describe('the dashboard chart samples', () => {
  it('outlive a restart: a new sampler starts with the last hours the earlier one stored, and forgets what is older', async () => {
    env = await createTestEnv({});
    const queues = createDeliverQueues(env.redis, env.config.redis.prefix, channelQueueSpecs(env.config));
    const key = `${env.config.redis.prefix}:dashboard:samples`;
    const hour = 3_600_000;
    const now = Date.now();
    const before = new PipelineSampler(env.notice, queues, pino({ level: 'silent' }), 30_000, 6 * hour, key);
    await before.sample(now - 7 * hour); // past the 6 h kept
    await before.sample(now - 2 * hour);
    await before.sample(now - hour);
    const after = new PipelineSampler(env.notice, queues, pino({ level: 'silent' }), 30_000, 6 * hour, key);
    expect(after.samples).toEqual([]);
    await after.restore(now);
    expect(after.samples.map((s) => s.atMs)).toEqual([now - 2 * hour, now - hour]);
    expect(after.samples[0]!.queued).toEqual(expect.objectContaining({ tencent_im_c2c: 0 }));
    // Without a store the samples are the process's own, as before.
    const memoryOnly = new PipelineSampler(env.notice, queues, pino({ level: 'silent' }), 30_000, 6 * hour);
    await memoryOnly.restore(now);
    expect(memoryOnly.samples).toEqual([]);
    await queues.close();
  });
});
