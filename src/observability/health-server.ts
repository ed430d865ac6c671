import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import type { HealthImplementation } from 'grpc-health-check';
import type { Logger } from 'pino';
import type { NoticeMetrics } from './metrics.ts';

export interface Readiness {
  ready: boolean;
  checks: Record<string, string>;
}

export interface HealthServerOptions {
  /** Listen address (health.host). */
  host?: string;
  httpPort: number;
  grpcPort: number;
  metrics: NoticeMetrics;
  readiness: () => Promise<Readiness>;
  logger: Logger;
  /** How often the gRPC serving status is re-evaluated. */
  refreshMs?: number;
}

/**
 * Health only, never an API with personal data (the inbox API has its own listener).
 * `/healthz` (alive), `/readyz` (dependencies answer and roles run), `/metrics` (Prometheus) over HTTP, and the
 * standard grpc.health.v1.Health service whose status follows readiness. A port of 0 disables that listener.
 */
export class HealthServer {
  private http: http.Server | null = null;
  private grpcServer: grpc.Server | null = null;
  private health: HealthImplementation | null = null;
  private timer: NodeJS.Timeout | null = null;
  httpPort = 0;
  grpcPort = 0;

  constructor(private readonly options: HealthServerOptions) {}

  async start(): Promise<void> {
    const { httpPort, grpcPort } = this.options;
    if (httpPort > 0) {
      const server = http.createServer((req, res) => void this.route(req, res));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(httpPort, this.options.host ?? '0.0.0.0', () => resolve());
      });
      this.http = server;
      this.httpPort = (server.address() as AddressInfo).port;
    }
    if (grpcPort > 0) {
      // gRPC loads only in processes that serve gRPC health.
      const grpc = await import('@grpc/grpc-js');
      const { HealthImplementation } = await import('grpc-health-check');
      this.health = new HealthImplementation({ '': 'NOT_SERVING' });
      const server = new grpc.Server();
      this.health.addToServer(server);
      this.grpcPort = await new Promise<number>((resolve, reject) =>
        server.bindAsync(`${this.options.host ?? '0.0.0.0'}:${grpcPort}`, grpc.ServerCredentials.createInsecure(), (err, port) =>
          err ? reject(err) : resolve(port),
        ),
      );
      this.grpcServer = server;
    }
    // Only the gRPC status needs refreshing in the background; HTTP /readyz evaluates on request.
    if (this.grpcServer) {
      await this.refresh();
      this.timer = setInterval(() => void this.refresh(), this.options.refreshMs ?? 5000);
      this.timer.unref();
    }
  }

  private async refresh(): Promise<Readiness> {
    const readiness = await this.options.readiness().catch((err: Error) => ({ ready: false, checks: { readiness: err.message } }));
    this.health?.setStatus('', readiness.ready ? 'SERVING' : 'NOT_SERVING');
    return readiness;
  }

  /** Mark not serving at once, so load balancers stop routing while we drain. */
  markShuttingDown(): void {
    this.health?.setStatus('', 'NOT_SERVING');
  }

  private async route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    try {
      if (path === '/healthz') return send(res, 200, 'application/json', JSON.stringify({ status: 'ok' }));
      if (path === '/readyz') {
        const readiness = await this.refresh();
        return send(res, readiness.ready ? 200 : 503, 'application/json', JSON.stringify(readiness));
      }
      if (path === '/metrics') return send(res, 200, this.options.metrics.contentType, await this.options.metrics.render());
      send(res, 404, 'text/plain', 'not found');
    } catch (err) {
      this.options.logger.warn({ err: (err as Error).message, path }, 'health endpoint failed');
      send(res, 500, 'text/plain', 'internal error');
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.markShuttingDown();
    const httpServer = this.http;
    this.http = null;
    if (httpServer) {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    }
    this.grpcServer?.forceShutdown();
    this.grpcServer = null;
  }
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type }).end(body);
}
