import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { NoticeConfig } from '../src/config/schema.ts';
import { RoleConfigError, type Role } from '../src/app/role.ts';
import type { DeliverQueues } from '../queues/deliver-queue.ts';
import { createDashboardApp } from './app.ts';
import { PipelineSampler } from './pipeline-sampler.ts';
import { backendWatch } from './app.ts';
import type { BackendWatch } from './backend-watch.ts';

export class DashboardRole implements Role {
  readonly name = 'dashboard';
  private server: Server | null = null;
  /** Queue depth and the oldest pending age over time, for the charts. */
  private readonly sampler: PipelineSampler;
  /** MySQL and Redis probed every few seconds, for the pages' outage banner. */
  private readonly watch: BackendWatch;
  port = 0;

  constructor(
    private readonly config: NoticeConfig,
    private readonly pool: Pool,
    private readonly queues: DeliverQueues,
    private readonly logger: Logger,
  ) {
    if (config.dashboard.auth.enabled && config.dashboard.auth.password === '') {
      throw new RoleConfigError('dashboard refuses to start: dashboard.auth.password is empty (set it, e.g. from ${DASHBOARD_PASSWORD})');
    }
    this.sampler = new PipelineSampler(pool, queues, logger, config.dashboard.chart_sample_interval, 6 * 3_600_000, `${config.redis.prefix}:dashboard:samples`);
    this.watch = backendWatch(pool, queues);
  }

  async start(): Promise<void> {
    this.sampler.start();
    this.watch.start();
    const app = createDashboardApp(this.config, this.pool, this.queues, this.logger, this.sampler, this.watch);
    await new Promise<void>((resolve, reject) => {
      const server = app.listen(this.config.dashboard.port, this.config.dashboard.host, (err?: Error) => (err ? reject(err) : resolve()));
      this.server = server;
    });
    this.port = (this.server!.address() as AddressInfo).port;
    this.logger.info(
      {
        host: this.config.dashboard.host,
        url: `http://${this.config.dashboard.host === '0.0.0.0' ? '127.0.0.1' : this.config.dashboard.host}:${this.port}${this.config.dashboard.base_path}/queues`,
        read_only: this.config.dashboard.read_only,
        auth: this.config.dashboard.auth.enabled,
      },
      'dashboard listening',
    );
  }

  async stop(): Promise<void> {
    this.sampler.stop();
    this.watch.stop();
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  isRunning(): boolean {
    return this.server?.listening ?? false;
  }
}
