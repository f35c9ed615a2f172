import { afterEach, describe, expect, it } from 'vitest';
import {
  agentMessageBytes,
  type AgentMessage,
  type OutputLineMsg,
} from '../contracts/agent-protocol/index.js';
import {
  MAX_OUTPUT_BYTES_PER_MESSAGE,
  MAX_OUTPUT_LINE_CHARS,
  MAX_OUTPUT_LINES_PER_MESSAGE,
} from '../contracts/agent-protocol/limits.js';
import { BURST_LINES, LINES_PER_SECOND, ServiceOutput } from './service-output.js';

const STACK = '6b0f3d52-3a51-4f0e-9d0c-3e1f0d1b2a40';

describe('service output on its way to the service', () => {
  let output: ServiceOutput | undefined;
  afterEach(() => output?.close());

  /** An output on a clock the test moves, and what it sent. */
  const setup = () => {
    const clock = { now: 1_700_000_000_000 };
    output = new ServiceOutput(() => clock.now);
    const sent: OutputLineMsg[][] = [];
    const messages: AgentMessage[] = [];
    let connected = true;
    output.attach((m) => {
      if (!connected) return false;
      messages.push(m);
      sent.push(m.output!.lines);
      return true;
    });
    return {
      clock,
      out: output,
      sent,
      messages,
      lines: () => sent.flat(),
      disconnect: () => (connected = false),
      reconnect: () => (connected = true),
    };
  };

  it('sends lines in order, stamped, cut at the line limit, in messages within their limits', () => {
    const { out, lines, messages, clock } = setup();
    out.line(STACK, 'web', 'stdout', 'first');
    clock.now += 5;
    out.line(STACK, 'web', 'stderr', '€'.repeat(MAX_OUTPUT_LINE_CHARS + 10));
    for (let i = 0; i < 1500; i++) out.line(STACK, 'api', 'stdout', `line ${i} ${'€'.repeat(1000)}`);
    out.flush();
    const all = lines();
    expect(all).toHaveLength(1502);
    expect(all[0]).toEqual({
      stack_id: STACK,
      service: 'web',
      time_ms: 1_700_000_000_000,
      stream: 'stdout',
      line: 'first',
    });
    expect(all[1]).toMatchObject({ stream: 'stderr', time_ms: 1_700_000_000_005 });
    expect(all[1].line).toHaveLength(MAX_OUTPUT_LINE_CHARS);
    expect(all.slice(2).map((l) => l.line.split(' ')[1])).toEqual(
      Array.from({ length: 1500 }, (_, i) => String(i)),
    );
    for (const m of messages) {
      expect(m.output!.lines.length).toBeLessThanOrEqual(MAX_OUTPUT_LINES_PER_MESSAGE);
      expect(agentMessageBytes(m)).toBeLessThanOrEqual(MAX_OUTPUT_BYTES_PER_MESSAGE + 64);
    }
    expect(messages.length).toBeGreaterThan(10);
  });

  it('drops what a service writes past its rate, and says how much once it slows down', () => {
    const { out, lines, clock } = setup();
    for (let i = 0; i < BURST_LINES + 50; i++) out.line(STACK, 'noisy', 'stdout', `n${i}`);
    // Another service keeps its own budget.
    out.line(STACK, 'quiet', 'stdout', 'still here');
    clock.now += 1000;
    out.line(STACK, 'noisy', 'stdout', 'after a second');
    out.flush();
    const noisy = lines().filter((l) => l.service === 'noisy');
    expect(noisy).toHaveLength(BURST_LINES + 2);
    expect(noisy[BURST_LINES]).toMatchObject({
      stream: 'agent',
      line: `50 lines dropped: more than ${LINES_PER_SECOND} a second`,
    });
    expect(noisy[BURST_LINES + 1].line).toBe('after a second');
    expect(
      lines()
        .filter((l) => l.service === 'quiet')
        .map((l) => l.line),
    ).toEqual(['still here']);
  });

  it('holds lines while no stream is up, and sends them, with a note of any it could not hold, on the next', () => {
    const { out, lines, disconnect, reconnect, clock } = setup();
    disconnect();
    for (let i = 0; i < 10_005; i++) {
      if (i % LINES_PER_SECOND === 0) clock.now += 1000;
      out.line(STACK, 'web', 'stdout', `l${i}`);
    }
    out.flush();
    expect(lines()).toEqual([]);
    reconnect();
    out.attach(() => false); // a stream that is already gone again keeps them too
    out.flush();
    expect(lines()).toEqual([]);
    const sent: OutputLineMsg[] = [];
    out.attach((m) => sent.push(...m.output!.lines) > 0);
    out.flush();
    expect(sent[0]).toMatchObject({
      stream: 'agent',
      line: '5 lines dropped while the agent was not connected',
    });
    expect(sent.slice(1).map((l) => l.line)).toEqual(Array.from({ length: 10_000 }, (_, i) => `l${i + 5}`));
  });
});
