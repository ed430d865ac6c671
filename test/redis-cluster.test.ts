import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import { freePort } from './helpers/ports.ts';

/** BullMQ on a real 3-master Redis Cluster on loopback, with the queue prefix in one hash slot. */
const nodes: PrivateRedis[] = [];
let seedUrl = '';

beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    const node = new PrivateRedis([
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      'nodes.conf',
      '--cluster-node-timeout',
      '2000',
      '--maxmemory-policy',
      'noeviction',
    ]);
    await node.start(await freePort());
    nodes.push(node);
  }
  const create = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], {
    encoding: 'utf8',
  });
  if (create.status !== 0) throw new Error(`cluster create failed: ${create.stdout}${create.stderr}`);
  const deadline = Date.now() + 20_000;
  while (!spawnSync('redis-cli', ['-p', String(nodes[0]!.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout.includes('cluster_state:ok')) {
    if (Date.now() > deadline) throw new Error('cluster did not reach cluster_state:ok');
    await new Promise((r) => setTimeout(r, 100));
  }
  seedUrl = `redis://127.0.0.1:${nodes[0]!.port}`;
});

afterAll(async () => {
  for (const node of nodes) await node.destroy();
});

describe('Redis Cluster', () => {
  let env: TestEnv | undefined;
  afterAll(async () => env?.close());

  it('runs the whole pipeline: every event delivered once, retries and the reconciler included', async () => {
    env = await createTestEnv({
      redis: { url: seedUrl, cluster: true, prefix: '{notice-cluster}' },
      reconciler: { interval: '300ms', pending_grace: '500ms' },
    });
    env.fakeIm.setFaults({ errors: [{ code: 70500, count: 5 }], not_imported: ['10003'] });
    const proc = await startPipeline(env.config);
    try {
      await insertWalletRows(
        env.owner,
        env.config.wallet_database,
        Array.from({ length: 200 }, (_, i) => balanceChanged(i + 1)),
      );
      await waitFor(
        () => ledgerStatusCounts(env!.notice),
        (c) => c.delivered === 196 && c.failed === 4,
        30_000,
        '196 delivered, 4 not imported',
      );
      expect(env.fakeIm.delivered()).toHaveLength(196);
      // All of the queue's keys sit in the slot of its hash tag.
      const slot = spawnSync('redis-cli', ['-p', String(nodes[0]!.port), 'cluster', 'keyslot', '{notice-cluster}'], { encoding: 'utf8' }).stdout.trim();
      const owner = nodes.find(
        (n) => spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'countkeysinslot', slot], { encoding: 'utf8' }).stdout.trim() !== '0',
      );
      expect(owner).toBeDefined();
      const ready = await proc.readiness();
      expect(ready.ready).toBe(true);
    } finally {
      await proc.stop();
    }
  });
});
