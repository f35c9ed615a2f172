import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import type { OutputLineMsg } from '../../contracts/agent-protocol/index.js';
import type { StackLogStream } from '../../contracts/api/stack-logs.js';
import { MAX_OUTPUT_LINE_CHARS } from '../../contracts/agent-protocol/limits.js';
import { isUuid } from '../common/ids.js';
import { printable } from '../common/printable.js';
import { DNS_LABEL } from '../stacks/definition/service-fields.js';
import { StackLogsRepository, type NewLogLine } from './stack-logs.repository.js';

/** Lines are written in batches this often. */
const FLUSH_MS = 200;
/** Lines waiting for the next write, all agents; more are dropped (and counted) until it ran. */
const MAX_BUFFERED_LINES = 50_000;
/** An agent's time is taken unless it is this far off the service's (a clock gone wrong). */
const MAX_PAST_MS = 7 * 86_400_000;
const MAX_FUTURE_MS = 60_000;
const STREAMS: ReadonlySet<string> = new Set<StackLogStream>(['stdout', 'stderr', 'agent']);

/**
 * The write buffer of the services' output lines, the hot path: lines are checked (a uuid stack,
 * a service name, a known stream, printable text within the line limit), kept in memory and
 * written every FLUSH_MS in one statement; followers on this replica are woken for the stacks
 * that got lines (`written`). On shutdown what is buffered is written.
 */
@Injectable()
export class StackLogWriter implements OnModuleDestroy {
  private readonly logger = new Logger('stack-monitoring');
  private buffered: NewLogLine[] = [];
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private flushing: Promise<void> = Promise.resolve();
  /** Emits `written` with a stack id after its lines are stored. */
  readonly events = new EventEmitter().setMaxListeners(0);

  constructor(private readonly repository: StackLogsRepository) {}

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.flush();
  }

  /** Buffers the lines one agent sent; malformed ones are dropped (the agent never sends them). */
  add(workerId: string, lines: readonly OutputLineMsg[], now = Date.now()): void {
    for (const l of lines) {
      if (!isUuid(l.stack_id) || !DNS_LABEL.test(l.service) || !STREAMS.has(l.stream)) continue;
      if (this.buffered.length >= MAX_BUFFERED_LINES) {
        this.dropped++;
        continue;
      }
      const ok =
        Number.isFinite(l.time_ms) && l.time_ms >= now - MAX_PAST_MS && l.time_ms <= now + MAX_FUTURE_MS;
      this.buffered.push({
        stackId: l.stack_id,
        workerId,
        service: l.service,
        time: new Date(ok ? l.time_ms : now),
        stream: l.stream as StackLogStream,
        line: printable(String(l.line)).slice(0, MAX_OUTPUT_LINE_CHARS),
      });
    }
    if (this.timer === undefined && !this.stopped && this.buffered.length > 0)
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, FLUSH_MS);
  }

  /** Writes what is buffered; serialized, so lines keep their order. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const lines = this.buffered;
      this.buffered = [];
      if (this.dropped > 0) {
        this.logger.warn(
          { dropped: this.dropped },
          'service output lines dropped: the write buffer was full',
        );
        this.dropped = 0;
      }
      if (lines.length === 0) return;
      try {
        for (const stackId of await this.repository.insert(lines)) this.events.emit('written', stackId);
      } catch (err) {
        this.logger.warn({ err, lines: lines.length }, 'service output lines not stored');
      }
    });
    return this.flushing;
  }
}
