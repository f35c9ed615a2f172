import { createServer, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** Node's own listen backlog. */
const NODE_BACKLOG = 511;

export interface ConnectionGateOptions {
  /** Connections between accept and `welcome` (TLS handshake, HTTP/2 set-up, hello) at once. */
  inFlight: number;
  /** Accepted connections that may wait for a turn; past it a new one is closed at once. */
  queue: number;
  /** A connection that waited this long is closed instead of admitted: its agent has given up. */
  maxWaitMs: number;
  /** A connection admitted but neither welcomed nor closed frees its turn after this long. */
  holdMs: number;
}

/** Why a connection was closed unadmitted. */
export type RefusedReason = 'queue_full' | 'waited_too_long';

/** What the gate reports as it goes (the service's metrics). */
export interface GateObserver {
  /** A connection was admitted after waiting `seconds` from its accept. */
  admitted(seconds: number): void;
  refused(reason: RefusedReason): void;
}

/**
 * The agent port's own listener, in front of grpc-js (`createConnectionInjector`): it admits at most
 * `inFlight` connections at a time from accept to `welcome`, in arrival order, and keeps the others
 * accepted but unread (`pauseOnConnect`) until their turn. When a whole fleet redials at once (after
 * a restart), handshaking every connection together made each one finish late: after the agents'
 * 10 s welcome timeout, so they gave up, redialled after a growing backoff, and the service did the
 * handshakes of connections already abandoned. In turn, each handshake finishes within its wait.
 * A connection is identified as grpc-js's `getPeer()` names it (`address:port` of the socket).
 */
export class ConnectionGate {
  /** Admitted connections by peer: the turn's timer, and when it began (`performance.now()`). */
  private readonly admitted = new Map<string, { timer: NodeJS.Timeout; at: number }>();
  private readonly waiting: { socket: Socket; at: number }[] = [];
  private server: Server | undefined;

  constructor(
    private readonly options: ConnectionGateOptions,
    private readonly inject: (socket: Socket) => void,
    private readonly observer?: GateObserver,
  ) {}

  /** When the connection `peer` names was admitted (`performance.now()`), while its turn lasts. */
  admittedAt(peer: string): number | undefined {
    return this.admitted.get(peer)?.at;
  }

  /** Connections waiting for a turn. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Connections admitted and not yet welcomed or closed. */
  get inFlight(): number {
    return this.admitted.size;
  }

  listen(host: string, port: number): Promise<number> {
    const server = createServer({ pauseOnConnect: true }, (socket) => this.arrive(socket));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      // The kernel's accept queue as deep as the gate's own (capped by net.core.somaxconn, 4096 by
      // default): Node's default of 511 overflowed when a fleet redialled while the process was
      // busy, and each connection dropped so waited for its client's SYN to be sent again, 1 s
      // later, then 2, 4... (docs/workers.md, "The kernel's accept queue").
      server.listen({ host, port, backlog: Math.max(NODE_BACKLOG, this.options.queue) }, () => {
        server.off('error', reject);
        const address = server.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /**
   * Stops accepting and closes the connections still waiting. Admitted ones are grpc-js's: its
   * shutdown ends them (so this does not wait for the listener's last connection).
   */
  close(): void {
    for (const { socket } of this.waiting.splice(0)) socket.destroy();
    for (const { timer } of this.admitted.values()) clearTimeout(timer);
    this.admitted.clear();
    this.server?.close();
    this.server = undefined;
  }

  /** The connection `peer` names (grpc-js `getPeer()`) was welcomed or refused: its turn is over. */
  settled(peer: string): void {
    const turn = this.admitted.get(peer);
    if (turn === undefined) return;
    clearTimeout(turn.timer);
    this.admitted.delete(peer);
    this.next();
  }

  private arrive(socket: Socket): void {
    // Until grpc-js has it, nobody else listens for its errors (a reset while it waits).
    socket.on('error', () => socket.destroy());
    const now = performance.now();
    if (this.admitted.size < this.options.inFlight && this.waiting.length === 0) {
      this.admit(socket, now, now);
      return;
    }
    if (this.waiting.length >= this.options.queue) {
      this.refuse(socket, 'queue_full');
      return;
    }
    this.waiting.push({ socket, at: now });
  }

  private refuse(socket: Socket, reason: RefusedReason): void {
    this.observer?.refused(reason);
    socket.destroy();
  }

  private admit(socket: Socket, arrivedAt: number, now: number): void {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const timer = setTimeout(() => this.settled(peer), this.options.holdMs);
    timer.unref();
    this.admitted.set(peer, { timer, at: now });
    this.observer?.admitted((now - arrivedAt) / 1000);
    socket.once('close', () => this.settled(peer));
    this.inject(socket);
  }

  private next(): void {
    const now = performance.now();
    while (this.admitted.size < this.options.inFlight && this.waiting.length > 0) {
      const { socket, at } = this.waiting.shift()!;
      if (socket.destroyed) continue;
      if (now - at > this.options.maxWaitMs) {
        this.refuse(socket, 'waited_too_long');
        continue;
      }
      this.admit(socket, at, now);
    }
  }
}
