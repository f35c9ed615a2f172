import type { Logger } from 'pino';
import type { StackRef } from './drivers/driver.js';

/** A runtime's view of its services' output (the docker driver's: container logs). */
export interface LogSource {
  /** The stack's running services, with an id that changes when a service is replaced. */
  running(stack: StackRef): Promise<{ service: string; id: string }[]>;
  /**
   * Follows one service's output from `sinceSeconds` (whole seconds) until it stops or `signal`
   * aborts; `line` gets each line with its timestamp in nanoseconds since the epoch.
   */
  follow(
    id: string,
    sinceSeconds: number,
    line: (stream: 'stdout' | 'stderr', ns: bigint, text: string) => void,
    signal: AbortSignal,
  ): Promise<void>;
}

export interface LogShipperOptions {
  /** How often the running services are looked at (new and replaced containers). Default 2 s. */
  pollMs?: number;
  /** How often buffered lines are pushed. Default 1 s. */
  flushMs?: number;
  /** Lines held per stack while the log store does not take them; the oldest go first. Default 10,000. */
  maxBuffered?: number;
  /** Lines per push. Default 1,000. */
  maxBatch?: number;
}

interface Entry {
  service: string;
  stream: 'stdout' | 'stderr';
  ns: bigint;
  line: string;
}

/**
 * How far a container's output was taken: its newest timestamp and how many lines carried it.
 * Runtimes stamp lines in whole seconds (podman) or nanoseconds (Docker), so lines of one second
 * are told apart by count when a follow starts again (`since` is whole seconds).
 */
interface Mark {
  ns: bigint;
  count: number;
}

/** Containers whose marks a stack keeps (replaced ones are forgotten oldest first). */
const MAX_MARKS = 1000;

interface Shipped {
  stack: StackRef;
  url: string;
  buffer: Entry[];
  dropped: number;
  /** Follows by container id. */
  following: Map<string, AbortController>;
  /** Per container, how far its output was taken: a follow started again skips that. */
  taken: Map<string, Mark>;
  /**
   * Per service, the timestamp last pushed: lines go out with timestamps made strictly increasing
   * (a nanosecond apart when equal), so the store keeps their order and does not merge equal lines.
   */
  pushed: Map<string, bigint>;
  failing: boolean;
  /** When dropped lines were last reported (at most once a minute). */
  droppedLoggedAt: number;
}

/** Characters of one line pushed; Docker splits longer output at 16 KiB anyway. */
const MAX_LINE = 16_384;

/**
 * Ships the output of a stack's containers to its log store (the monitoring stack's Loki, through
 * its push API in JSON, labelled `stack`, `stack_id`, `service` and `stream`). The job runner tells
 * it which stacks to ship and where (JobCommand.log_push_url). Lines are buffered in memory, pushed
 * every second and kept (up to a bound) while the store is not up yet; what a container printed
 * while no agent ran is not shipped (each follow starts at the agent's start or the newest line
 * taken). Lines are never logged: they may hold anything the service prints.
 */
export class LogShipper {
  private readonly stacks = new Map<string, Shipped>();
  private readonly started = Math.floor(Date.now() / 1000);
  private readonly timers: NodeJS.Timeout[] = [];
  private flushing = false;
  private polling = false;
  private readonly options: Required<LogShipperOptions>;

  constructor(
    private readonly source: LogSource,
    private readonly log: Logger,
    options: LogShipperOptions = {},
  ) {
    this.options = { pollMs: 2000, flushMs: 1000, maxBuffered: 10_000, maxBatch: 1000, ...options };
    const every = (ms: number, work: () => Promise<void>) => {
      const timer = setInterval(() => void work(), ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.options.pollMs, () => this.poll());
    every(this.options.flushMs, () => this.flush());
  }

  /** Ships the stack's output to `url`, or stops shipping it (null). */
  set(stack: StackRef, url: string | null): void {
    const current = this.stacks.get(stack.id);
    if (current && current.url === url) return;
    if (current) this.stop(current);
    if (url === null) return;
    this.stacks.set(stack.id, {
      stack,
      url,
      buffer: [],
      dropped: 0,
      following: new Map(),
      taken: current?.taken ?? new Map<string, Mark>(),
      pushed: current?.pushed ?? new Map<string, bigint>(),
      failing: false,
      droppedLoggedAt: 0,
    });
    this.log.info({ stack_id: stack.id, url }, 'shipping the stack’s output to its log store');
    void this.poll();
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    await this.flush();
    for (const shipped of this.stacks.values()) this.stop(shipped);
  }

  private stop(shipped: Shipped): void {
    for (const follow of shipped.following.values()) follow.abort();
    this.stacks.delete(shipped.stack.id);
  }

  /** Starts a follow for each running container not followed yet. */
  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      for (const shipped of [...this.stacks.values()]) {
        let running;
        try {
          running = await this.source.running(shipped.stack);
        } catch (err) {
          this.log.debug({ stack_id: shipped.stack.id, err: (err as Error).message }, 'log source not read');
          continue;
        }
        for (const { service, id } of running) {
          if (shipped.following.has(id) || this.stacks.get(shipped.stack.id) !== shipped) continue;
          this.follow(shipped, service, id);
        }
      }
    } finally {
      this.polling = false;
    }
  }

  private follow(shipped: Shipped, service: string, id: string): void {
    const controller = new AbortController();
    shipped.following.set(id, controller);
    const start = shipped.taken.get(id);
    const since = start === undefined ? this.started : Number(start.ns / 1_000_000_000n);
    // Lines an earlier follow took: everything before its newest timestamp, and that many at it.
    let skip = start?.count ?? 0;
    const take = (stream: 'stdout' | 'stderr', ns: bigint, line: string) => {
      if (start !== undefined && ns < start.ns) return;
      if (start !== undefined && ns === start.ns && skip > 0) {
        skip--;
        return;
      }
      const mark = shipped.taken.get(id);
      shipped.taken.delete(id); // re-inserted: the newest marks are the last to be forgotten
      shipped.taken.set(id, { ns, count: mark !== undefined && mark.ns === ns ? mark.count + 1 : 1 });
      if (shipped.taken.size > MAX_MARKS) shipped.taken.delete(shipped.taken.keys().next().value!);
      const last = shipped.pushed.get(service);
      const at = last === undefined || ns > last ? ns : last + 1n;
      shipped.pushed.set(service, at);
      shipped.buffer.push({ service, stream, ns: at, line: line.slice(0, MAX_LINE) });
      if (shipped.buffer.length > this.options.maxBuffered) {
        shipped.buffer.shift();
        shipped.dropped++;
      }
    };
    this.source
      .follow(id, since, take, controller.signal)
      .catch((err: unknown) => {
        if (!controller.signal.aborted)
          this.log.debug(
            { stack_id: shipped.stack.id, service, err: (err as Error).message },
            'log follow ended',
          );
      })
      // The next poll follows it again if it still runs (or its replacement).
      .finally(() => shipped.following.delete(id));
  }

  /** Pushes what each stack buffered, a batch at a time; keeps it when the store does not take it. */
  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      for (const shipped of [...this.stacks.values()]) {
        while (shipped.buffer.length > 0) {
          const batch = shipped.buffer.slice(0, this.options.maxBatch);
          if (!(await this.push(shipped, batch))) break;
          shipped.buffer.splice(0, batch.length);
        }
        if (shipped.dropped > 0 && Date.now() - shipped.droppedLoggedAt >= 60_000) {
          this.log.warn(
            { stack_id: shipped.stack.id, dropped_lines: shipped.dropped },
            'log lines dropped: the log store did not take them in time',
          );
          shipped.dropped = 0;
          shipped.droppedLoggedAt = Date.now();
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async push(shipped: Shipped, batch: Entry[]): Promise<boolean> {
    const streams = new Map<string, { stream: Record<string, string>; values: [string, string][] }>();
    for (const e of batch) {
      const key = `${e.service}\u0000${e.stream}`;
      let s = streams.get(key);
      if (!s) {
        s = {
          stream: {
            stack: shipped.stack.name,
            stack_id: shipped.stack.id,
            service: e.service,
            stream: e.stream,
          },
          values: [],
        };
        streams.set(key, s);
      }
      s.values.push([e.ns.toString(), e.line]);
    }
    let problem: string | null = null;
    try {
      const res = await fetch(shipped.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ streams: [...streams.values()] }),
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status === 400) {
        // The store refuses these lines for good (too old, too long): retrying would stall the rest.
        this.log.warn(
          { stack_id: shipped.stack.id, status: res.status, lines: batch.length },
          'log store refused lines',
        );
        return true;
      }
      if (res.status < 200 || res.status >= 300) problem = `HTTP ${res.status}`;
    } catch (err) {
      problem = (err as Error).message;
    }
    if (problem === null) {
      if (shipped.failing)
        this.log.info({ stack_id: shipped.stack.id }, 'log store takes the stack’s output again');
      shipped.failing = false;
      return true;
    }
    if (!shipped.failing)
      this.log.warn(
        { stack_id: shipped.stack.id, url: shipped.url, err: problem },
        'log store not reachable; holding lines',
      );
    shipped.failing = true;
    return false;
  }
}

/** `2024-05-01T12:00:00.123456789Z` (Docker's log timestamps) in nanoseconds since the epoch. */
export function timestampNs(text: string): bigint | undefined {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(text);
  if (!match) return undefined;
  const ms = Date.parse(`${match[1]}${match[3]}`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}
