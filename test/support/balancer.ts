import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP balancer, as a Kubernetes Service or HAProxy in TCP mode: each new connection goes
 * to the next backend in turn; a backend that refuses is skipped for the next one (a dead replica
 * costs a retry, not a failed connection), and only when every backend refuses is the client's
 * connection closed. Backends can be swapped while it runs (a replica restarted on another port).
 */
export class TcpBalancer {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private next = 0;
  port = 0;

  constructor(private backends: number[]) {}

  setBackends(ports: number[]): void {
    this.backends = [...ports];
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      client.pause();
      this.track(client);
      const first = this.next++;
      const attempt = (tried: number) => {
        if (tried >= this.backends.length || client.destroyed) {
          client.destroy();
          return;
        }
        const port = this.backends[(first + tried) % this.backends.length];
        const upstream = connect(port, '127.0.0.1');
        upstream.once('error', () => {
          upstream.destroy();
          if (!connected) attempt(tried + 1);
          else client.destroy();
        });
        let connected = false;
        upstream.once('connect', () => {
          connected = true;
          this.track(upstream);
          client.pipe(upstream).pipe(client);
          client.resume();
          client.on('close', () => upstream.destroy());
          upstream.on('close', () => client.destroy());
        });
      };
      client.on('error', () => client.destroy());
      attempt(0);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }
}
