import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { freePort } from './ports.ts';

/**
 * A private MariaDB instance in a temp dir on a free loopback port, for faults that restart or crash the server;
 * the shared one on :3306 is never touched. Grant tables are skipped: root connects with no password.
 */
export class PrivateMariaDb {
  private child: ChildProcess | null = null;
  readonly dir = mkdtempSync(join(tmpdir(), 'notice-mariadb-'));
  port = 0;

  /** `extraArgs`: server options beyond the defaults below (e.g. a low --max-allowed-packet). */
  constructor(private readonly extraArgs: readonly string[] = []) {}

  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}`;
  }

  async start(): Promise<string> {
    if (!this.port) {
      this.port = await freePort();
      const install = spawnSync(
        'mariadb-install-db',
        ['--no-defaults', `--datadir=${join(this.dir, 'data')}`, '--user=root', '--auth-root-authentication-method=normal', '--skip-test-db'],
        { encoding: 'utf8' },
      );
      if (install.status !== 0) throw new Error(`mariadb-install-db failed: ${install.stderr.slice(-500)}`);
    }
    this.child = spawn(
      'mariadbd',
      [
        '--no-defaults',
        `--datadir=${join(this.dir, 'data')}`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        `--socket=${join(this.dir, 'sock')}`,
        '--user=root',
        '--skip-grant-tables',
        '--skip-log-bin',
        '--innodb-buffer-pool-size=128M',
        '--max-connections=500',
        `--log-error=${join(this.dir, 'error.log')}`,
        ...this.extraArgs,
      ],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const conn = await mysql.createConnection({ uri: this.url, connectTimeout: 1000 });
        await conn.end();
        return this.url;
      } catch (err) {
        if (Date.now() > deadline || this.child.exitCode !== null) throw new Error(`mariadbd on ${this.port} did not start: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** SIGKILL: a crash, so the restart runs InnoDB crash recovery (committed transactions survive). */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  }

  /** Replicates `primary` by GTID from its start (both started empty), as a replica of a managed primary does. */
  async replicate(primary: PrivateMariaDb): Promise<void> {
    await this.sql(
      `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primary.port}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1`,
      'START SLAVE',
    );
  }

  /** The replica falls behind: its SQL thread stops applying what the IO thread keeps fetching. */
  async stopApplying(): Promise<void> {
    await this.sql('STOP SLAVE SQL_THREAD');
  }

  /** Promotion as an operator's failover does it: stop replicating and forget the old primary (unapplied relay log dropped). */
  async promote(): Promise<void> {
    await this.sql('STOP SLAVE', 'RESET SLAVE ALL');
  }

  private async sql(...statements: string[]): Promise<void> {
    const conn = await mysql.createConnection({ uri: this.url });
    try {
      for (const statement of statements) await conn.query(statement);
    } finally {
      await conn.end();
    }
  }

  async destroy(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
