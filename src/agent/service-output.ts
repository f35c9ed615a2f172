import type { AgentMessage, OutputLineMsg, OutputStream } from '../contracts/agent-protocol/index.js';
import {
  MAX_OUTPUT_BYTES_PER_MESSAGE,
  MAX_OUTPUT_LINE_CHARS,
  MAX_OUTPUT_LINES_PER_MESSAGE,
  outputLineBytes,
} from '../contracts/agent-protocol/limits.js';

/** Lines are sent in batches at most this often. */
const FLUSH_MS = 250;
/** Each service may write this many lines a second on average, in bursts of BURST_LINES. */
export const LINES_PER_SECOND = 200;
export const BURST_LINES = 2000;
/** Lines held while no stream is up; past it the oldest go (and are counted). */
const MAX_HELD_LINES = 10_000;

interface Budget {
  tokens: number;
  at: number;
  dropped: number;
}

/**
 * The stacks' services' output on its way to the service (`ServiceOutput`, docs/stack-logs.md):
 * each line stamped when read, cut at MAX_OUTPUT_LINE_CHARS, sent in batches within the message
 * limits. A service writing faster than LINES_PER_SECOND (bursts of BURST_LINES) loses the excess,
 * and once it slows down an `agent` line says how many were dropped. While no stream is up the
 * newest MAX_HELD_LINES wait for the next one.
 */
export class ServiceOutput {
  private held: OutputLineMsg[] = [];
  /** Lines dropped from `held` per stack and service, said in the next batch sent. */
  private readonly heldDropped = new Map<string, { stackId: string; service: string; count: number }>();
  private readonly budgets = new Map<string, Budget>();
  private timer: NodeJS.Timeout | undefined;
  private send: (message: AgentMessage) => boolean = () => false;
  /** The last send failed: until a new stream, lines wait for the timer instead of each trying. */
  private stalled = true;

  constructor(private readonly now: () => number = Date.now) {}

  /** The stream to send on; what was held goes with the next flush. */
  attach(send: (message: AgentMessage) => boolean): void {
    this.send = send;
    this.stalled = false;
    this.schedule();
  }

  detach(): void {
    this.send = () => false;
    this.stalled = true;
  }

  /** One line a service wrote (without its line end). */
  line(stackId: string, service: string, stream: OutputStream, text: string): void {
    const at = this.now();
    const budget = this.budget(`${stackId}/${service}`, at);
    if (budget.tokens < 1) {
      budget.dropped++;
      return;
    }
    if (budget.dropped > 0) {
      this.hold({
        stack_id: stackId,
        service,
        time_ms: at,
        stream: 'agent',
        line: `${budget.dropped} lines dropped: more than ${LINES_PER_SECOND} a second`,
      });
      budget.dropped = 0;
    }
    budget.tokens--;
    const line = text.length > MAX_OUTPUT_LINE_CHARS ? text.slice(0, MAX_OUTPUT_LINE_CHARS) : text;
    this.hold({ stack_id: stackId, service, time_ms: at, stream, line });
  }

  /** Forgets the rate budgets of a stack's services (the stack went from this node). */
  forget(stackId: string): void {
    for (const key of this.budgets.keys()) if (key.startsWith(`${stackId}/`)) this.budgets.delete(key);
  }

  /** Sends what is held, in batches within the message limits; keeps it when no stream is up. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.held.length > 0 || this.heldDropped.size > 0) {
      const at = this.now();
      const notes: OutputLineMsg[] = [...this.heldDropped.values()].map((d) => ({
        stack_id: d.stackId,
        service: d.service,
        time_ms: at,
        stream: 'agent',
        line: `${d.count} lines dropped while the agent was not connected`,
      }));
      let count = 0;
      let bytes = notes.reduce((sum, note) => sum + outputLineBytes(note), 0);
      while (count < this.held.length && notes.length + count < MAX_OUTPUT_LINES_PER_MESSAGE) {
        const size = outputLineBytes(this.held[count]);
        if (count > 0 && bytes + size > MAX_OUTPUT_BYTES_PER_MESSAGE) break;
        bytes += size;
        count++;
      }
      if (!this.send({ output: { lines: [...notes, ...this.held.slice(0, count)] } })) {
        this.stalled = true;
        this.schedule();
        return;
      }
      this.heldDropped.clear();
      this.held = this.held.slice(count);
    }
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private hold(line: OutputLineMsg): void {
    this.held.push(line);
    if (this.held.length > MAX_HELD_LINES) {
      const gone = this.held.shift()!;
      const key = `${gone.stack_id}/${gone.service}`;
      const dropped = this.heldDropped.get(key);
      if (dropped) dropped.count++;
      else if (this.heldDropped.size < MAX_OUTPUT_LINES_PER_MESSAGE / 2)
        this.heldDropped.set(key, { stackId: gone.stack_id, service: gone.service, count: 1 });
    }
    if (this.held.length >= MAX_OUTPUT_LINES_PER_MESSAGE && !this.stalled) this.flush();
    else this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.held.length === 0) return;
    this.timer = setTimeout(() => this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  private budget(key: string, at: number): Budget {
    let budget = this.budgets.get(key);
    if (!budget) this.budgets.set(key, (budget = { tokens: BURST_LINES, at, dropped: 0 }));
    budget.tokens = Math.min(BURST_LINES, budget.tokens + ((at - budget.at) / 1000) * LINES_PER_SECOND);
    budget.at = at;
    return budget;
  }
}
