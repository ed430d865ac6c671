import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { spawnNotice } from './helpers/spawn.ts';

/** No Docker engine runs here, so the compose file is checked statically: structure, and every command against the CLI. */
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as { services: Record<string, any> };
const ours = Object.entries(compose.services).filter(([, s]) => s.image === 'notice-service:local');

describe('docker-compose.yml', () => {
  it('has every part of the pipeline', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['dashboard', 'deliver', 'demo', 'fake-im', 'ingest', 'migrate', 'mysql', 'redis', 'rmq-broker', 'rmq-init', 'rmq-namesrv', 'rmq-proxy'].sort());
    expect(compose.services.mysql.image).toMatch(/^mysql:8/);
    expect(compose.services.redis.command).toEqual(expect.arrayContaining(['--appendonly', 'yes', '--maxmemory-policy', 'noeviction']));
    expect(compose.services['rmq-proxy'].ports).toContain('8081:8081');
    expect(compose.services['rmq-init'].command.join(' ')).toMatch(/updateTopic .*hyapp_room_outbox[\s\S]*updateSubGroup .*hyapp-notice-room-outbox/);
    for (const role of ['ingest', 'deliver', 'dashboard', 'demo']) {
      expect(compose.services[role].depends_on.migrate).toEqual({ condition: 'service_completed_successfully' });
    }
    // deliver must scale: no fixed container name or host port.
    expect(compose.services.deliver.container_name).toBeUndefined();
    expect(compose.services.deliver.ports).toBeUndefined();
    const initSql = readFileSync('docker/mysql-init/01-databases.sql', 'utf8');
    for (const db of ['hyapp_notice', 'hyapp_wallet', 'hyapp_room']) expect(initSql).toContain(`CREATE DATABASE IF NOT EXISTS ${db}`);
  });

  it.each(ours.map(([name, service]) => [name, service.command as string[]]))('service %s runs a command the CLI accepts with configs/docker.yaml', async (_name, command) => {
    const proc = spawnNotice(command, { NOTICE_VALIDATE_ONLY: '1', NOTICE_CONFIG: 'configs/docker.yaml' });
    expect(await proc.exited, proc.output()).toBe(0);
    expect(proc.output()).toContain('arguments and config are valid');
  });

  it('the production example config is valid once its secrets are set', async () => {
    const env = { NOTICE_VALIDATE_ONLY: '1', TENCENT_IM_SECRET_KEY: 's', NOTICE_MYSQL_PASSWORD: 'p', NOTICE_REDIS_PASSWORD: 'p', ROCKETMQ_ACCESS_KEY: 'a', ROCKETMQ_SECRET_KEY: 'b', DASHBOARD_PASSWORD: 'long-enough-password' };
    const ok = spawnNotice(['deliver', '--config', 'configs/tencent.example.yaml'], env);
    expect(await ok.exited, ok.output()).toBe(0);
    const missing = spawnNotice(['deliver', '--config', 'configs/tencent.example.yaml'], { NOTICE_VALIDATE_ONLY: '1', TENCENT_IM_SECRET_KEY: '', ROCKETMQ_ACCESS_KEY: '' });
    expect(await missing.exited).toBe(2);
    expect(missing.output()).toContain('tencent_im.secret_key: environment variable TENCENT_IM_SECRET_KEY is not set');
  });
});
