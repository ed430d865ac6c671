import net from 'node:net';

/**
 * A TCP forwarder in front of a real server (MariaDB here), so one test can take "the database" away — refused
 * connections and cut sessions — without touching the server other tests share.
 */
export class TcpProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  /** `dropIdleAfterMs`: like a proxy or NAT that forgets idle connections, reset one whose next bytes come later. */
  constructor(
    private readonly targetHost: string,
    private targetPort: number,
    private readonly dropIdleAfterMs = 0,
  ) {}

  /** Connections reset unforwarded because they had been idle too long. */
  droppedIdle = 0;

  async start(port = this.port): Promise<number> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      if (this.dropIdleAfterMs > 0) {
        let lastActivity = Date.now();
        upstream.on('data', () => (lastActivity = Date.now()));
        client.on('data', (chunk: Buffer) => {
          if (Date.now() - lastActivity > this.dropIdleAfterMs) {
            this.droppedIdle++;
            upstream.destroy();
            client.resetAndDestroy();
            return;
          }
          lastActivity = Date.now();
          upstream.write(chunk);
        });
        upstream.pipe(client);
      } else {
        client.pipe(upstream).pipe(client);
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** Refuse new connections and cut every open one. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async up(): Promise<void> {
    await this.start(this.port);
  }

  /** A VIP moved to another server: every open connection cut, new ones go to `port`. */
  async repoint(port: number): Promise<void> {
    await this.down();
    this.targetPort = port;
    await this.up();
  }
}
