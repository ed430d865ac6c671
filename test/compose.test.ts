import { describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { spawnNotice } from './helpers/spawn.ts';
import { MYSQL_SERVER } from './helpers/env.ts';

/** No Docker engine runs here, so the compose file is checked statically: structure, and every command against the CLI. */
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as { services: Record<string, any> };
const ours = Object.entries(compose.services).filter(([, s]) => s.image === 'notice-service:local');

describe('docker-compose.yml', () => {
  it('has every part of the pipeline', () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      ['dashboard', 'deliver', 'demo', 'fake-im', 'ingest', 'migrate', 'mysql', 'redis', 'rmq-broker', 'rmq-init', 'rmq-namesrv', 'rmq-proxy'].sort(),
    );
    expect(compose.services.mysql.image).toBe('mysql:8.4');
    expect(compose.services.redis.command).toEqual(expect.arrayContaining(['--appendonly', 'yes', '--maxmemory-policy', 'noeviction']));
    // Nothing on the host needs the proxy; every published port is on loopback.
    expect(compose.services['rmq-proxy'].ports).toBeUndefined();
    for (const [name, service] of Object.entries(compose.services)) {
      for (const port of service.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:/);
    }
    expect(compose.services['rmq-init'].environment).toMatchObject({ TOPIC: 'hyapp_room_outbox', GROUP: 'hyapp-notice-room-outbox' });
    // One builder: six services building one tag in parallel race on its export.
    expect(ours.filter(([, s]) => s.build).map(([name]) => name)).toEqual(['migrate']);
    expect(compose.services.migrate.pull_policy).toBe('build');
    for (const [name, service] of ours) {
      if (name !== 'migrate') expect(service.pull_policy, name).toBe('never');
      expect(service.init, name).toBe(true);
    }
    // Wallet notices must not wait on RocketMQ.
    for (const [name, service] of ours)
      expect(
        Object.keys(service.depends_on ?? {}).filter((d) => d.startsWith('rmq-')),
        name,
      ).toEqual([]);
    // JVMs: a young generation inside each heap.
    for (const name of ['rmq-namesrv', 'rmq-broker', 'rmq-proxy']) expect(compose.services[name].environment.JAVA_OPT_EXT, name).toMatch(/-Xmx\d+m .*-Xmn\d+m/);
    for (const role of ['ingest', 'deliver', 'dashboard', 'demo']) {
      expect(compose.services[role].depends_on.migrate).toEqual({ condition: 'service_completed_successfully' });
    }
    // deliver must scale: no fixed container name or host port.
    expect(compose.services.deliver.container_name).toBeUndefined();
    expect(compose.services.deliver.ports).toBeUndefined();
    // The project's own variable name, the same in compose, the init and the config.
    expect(compose.services.mysql.environment.NOTICE_MYSQL_PASSWORD).toBe('${NOTICE_MYSQL_PASSWORD:-hyapp}');
    expect(readFileSync('configs/docker.yaml', 'utf8')).toContain('${NOTICE_MYSQL_PASSWORD:-hyapp}');
    expect(readFileSync('docker-compose.yml', 'utf8')).not.toMatch(/[^_]MYSQL_PASSWORD/);
  });

  it('the mysql init script creates the databases and a user that logs in with a password full of quotes', async () => {
    const mysql = await import('mysql2/promise');
    const id = `ini${Date.now().toString(36)}`;
    const password = `p'a\\s"s-$x`;
    const server = new URL(MYSQL_SERVER);
    const root = await mysql.createConnection({ uri: MYSQL_SERVER });
    try {
      const run = spawnSync('bash', ['docker/mysql-init/01-databases.sh'], {
        env: {
          ...process.env,
          NOTICE_MYSQL_PASSWORD: password,
          NOTICE_DB_PREFIX: id,
          NOTICE_DB_USER: `${id}_u`,
          MYSQL_CLIENT: 'mariadb',
          MYSQL_CLIENT_ARGS: `--protocol=tcp -h${server.hostname} -P${server.port || 3306}`,
          MYSQL_ROOT_PASSWORD: decodeURIComponent(server.password),
        },
        encoding: 'utf8',
      });
      expect(run.status, run.stderr).toBe(0);
      const user = await mysql.createConnection({ host: server.hostname, port: Number(server.port || 3306), user: `${id}_u`, password });
      const [dbs] = await user.query<any[]>('SHOW DATABASES');
      expect(
        dbs
          .map((d) => d.Database)
          .filter((d: string) => d.startsWith(id))
          .sort(),
      ).toEqual([`${id}_activity`, `${id}_notice`, `${id}_room`, `${id}_wallet`]);
      await user.end();
    } finally {
      for (const db of ['notice', 'wallet', 'room', 'activity']) await root.query(`DROP DATABASE IF EXISTS \`${id}_${db}\``);
      await root.query(`DROP USER IF EXISTS '${id}_u'@'%'`);
      await root.end();
    }
  });

  it('rmq-init retries until mqadmin reports success, and fails loudly when it never does', () => {
    // A stand-in mqadmin: fails (exit 0, like the real one) for the first calls, then prints the 5.3.2 success lines.
    const dir = mkdtempSync(join(tmpdir(), 'rmq-init-'));
    const fake = join(dir, 'mqadmin');
    writeFileSync(
      fake,
      [
        '#!/bin/sh',
        `n=$(cat "${dir}/calls" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "${dir}/calls"`,
        'if [ "$n" -le "${FAIL_FIRST:-0}" ]; then echo "[error] Make sure the specified clusterName exists"; exit 0; fi',
        'case "$1" in',
        '  updateTopic) echo "create topic to 172.18.0.4:10911 success." ;;',
        '  updateSubGroup) echo "create subscription group to 172.18.0.4:10911 success." ;;',
        `  topicRoute) echo '{"queueDatas":[{"brokerName":"b","readQueueNums":8,"writeQueueNums":8}]}' ;;`,
        '  getConsumerConfig) echo "groupName = hyapp-notice-room-outbox" ;;',
        'esac',
        '',
      ].join('\n'),
    );
    chmodSync(fake, 0o755);
    const run = (extra: Record<string, string>) =>
      spawnSync('sh', ['docker/rmq-init.sh'], { env: { ...process.env, MQADMIN: fake, PAUSE: '0', ATTEMPTS: '5', ...extra }, encoding: 'utf8' });
    const ok = run({ FAIL_FIRST: '2' });
    expect(ok.status, ok.stdout).toBe(0);
    expect(ok.stdout).toMatch(
      /attempt 1\/5: not yet[\s\S]*create topic to .* success[\s\S]*created and verified topic hyapp_room_outbox and consumer group hyapp-notice-room-outbox/,
    );
    writeFileSync(join(dir, 'calls'), '0');
    const never = run({ FAIL_FIRST: '100' });
    expect(never.status).toBe(1);
    expect(never.stdout).toContain('FAILED after 5 attempts');
  });

  it.each(ours.map(([name, service]) => [name, service.command as string[]]))(
    'service %s runs a command the CLI accepts with configs/docker.yaml',
    async (_name, command) => {
      const proc = spawnNotice(command, { NOTICE_VALIDATE_ONLY: '1', NOTICE_CONFIG: 'configs/docker.yaml' });
      expect(await proc.exited, proc.output()).toBe(0);
      expect(proc.output()).toContain('arguments and config are valid');
    },
  );

  it('the production example config is valid once its secrets are set', async () => {
    const env = {
      NOTICE_VALIDATE_ONLY: '1',
      TENCENT_IM_SECRET_KEY: 's',
      NOTICE_MYSQL_PASSWORD: 'p',
      NOTICE_REDIS_PASSWORD: 'p',
      ROCKETMQ_ACCESS_KEY: 'a',
      ROCKETMQ_SECRET_KEY: 'b',
      DASHBOARD_PASSWORD: 'long-enough-password',
    };
    const ok = spawnNotice(['deliver', '--config', 'configs/tencent.example.yaml'], env);
    expect(await ok.exited, ok.output()).toBe(0);
    const missing = spawnNotice(['deliver', '--config', 'configs/tencent.example.yaml'], {
      NOTICE_VALIDATE_ONLY: '1',
      TENCENT_IM_SECRET_KEY: '',
      ROCKETMQ_ACCESS_KEY: '',
    });
    expect(await missing.exited).toBe(2);
    expect(missing.output()).toContain('tencent_im.secret_key: environment variable TENCENT_IM_SECRET_KEY is not set');
  });
});
