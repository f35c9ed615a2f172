import { describe, expect, it } from 'vitest';
import { agentMessageBytes, serverMessageBytes, type ServiceSpecMsg } from './index.js';
import {
  MAX_AGENT_MESSAGE_BYTES,
  MAX_JOB_ERROR_CHARS,
  MAX_JOB_LINE_CHARS,
  MAX_JOB_LINES_BYTES,
  MAX_SERVICES_PER_STACK,
  MAX_STACK_SPEC_BYTES,
  serviceSpecBytes,
  stackSpecBytes,
} from './limits.js';

const spec = (over: Partial<ServiceSpecMsg> = {}): ServiceSpecMsg => ({
  name: 'web',
  image: 'registry.example.com/team/app:2.1',
  command: ['/usr/bin/app', '--port', '8080'],
  env: { GREETING: 'grüß dich', SECRET: '${SECRET}' },
  ports: [
    { container: 80, host: 8080, protocol: 'tcp' },
    { container: 53, host: 5353, protocol: 'udp' },
  ],
  cpu: 0.25,
  memory_bytes: 3 * 2 ** 30,
  restart: 'on-failure',
  health_check: { path: '/healthz', port: 8080, interval_ms: 90_000 },
  metrics: { port: 9100, path: '/metrics', interval_ms: 15_000 },
  digest: `sha256:${'a'.repeat(64)}`,
  ...over,
});

/** Bytes of the `job` wrapper around a command of `inner` bytes: its tag and length prefix. */
const wrapped = (inner: number) =>
  1 + (inner < 2 ** 7 ? 1 : inner < 2 ** 14 ? 2 : inner < 2 ** 21 ? 3 : 4) + inner;

describe('agent channel limits', () => {
  it('computes a service spec exactly as the protocol encodes it', () => {
    const specs = [
      spec(),
      spec({
        name: 'a',
        image: '',
        command: [],
        env: {},
        ports: [],
        health_check: null,
        metrics: null,
        memory_bytes: 0,
      }),
      spec({ metrics: { port: 0, path: '/', interval_ms: 3_600_000 } }),
      spec({ env: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`V${i}`, 'é'.repeat(i * 7)])) }),
      spec({ command: ['/bin/app', 'x'.repeat(70_000)] }),
      spec({
        files: [
          { path: '/etc/app/app.yml', content: 'grüß: dich\n'.repeat(2000), mode: 0o644 },
          { path: '/etc/app/secret', content: '', mode: 0 },
        ],
      }),
    ];
    for (const one of specs)
      expect(serverMessageBytes({ job: { services: [one] } as never })).toBe(wrapped(stackSpecBytes([one])));
    expect(serverMessageBytes({ job: { services: specs } as never })).toBe(wrapped(stackSpecBytes(specs)));
    expect(stackSpecBytes(specs)).toBeGreaterThan(specs.reduce((sum, s) => sum + serviceSpecBytes(s), 0));
  });

  it('leaves a provision command of the largest stack far below the message limit', () => {
    // As many services as any variant may have, with the longest names, filling the spec budget.
    const name = (i: number) => `s${String(i).padStart(62, '0')}`;
    const small = Array.from({ length: MAX_SERVICES_PER_STACK }, (_, i) => spec({ name: name(i) }));
    const room = MAX_STACK_SPEC_BYTES - stackSpecBytes(small);
    const services = [
      ...small.slice(1),
      spec({ name: name(0), env: { ...small[0].env, FILL: 'x'.repeat(room - 15) } }),
    ];
    expect(stackSpecBytes(services)).toBeLessThanOrEqual(MAX_STACK_SPEC_BYTES);
    expect(stackSpecBytes(services)).toBeGreaterThan(MAX_STACK_SPEC_BYTES - 16);
    const bytes = serverMessageBytes({
      job: {
        job_id: crypto.randomUUID(),
        type: 'provision',
        stack_id: crypto.randomUUID(),
        stack_name: 'x'.repeat(63),
        revision: 2 ** 32 - 1,
        services,
        timeout_ms: 2 ** 32 - 1,
        attempt: 2 ** 32 - 1,
        keep: services.map((s) => s.name),
        replace: services.map((s) => s.name),
      },
    });
    expect(bytes).toBeLessThan(530 * 1024);
    expect(bytes).toBeLessThan(MAX_AGENT_MESSAGE_BYTES / 7);
  });

  it('leaves the largest job event the agent sends below the message limit', () => {
    // Three UTF-8 bytes per character: the worst case for lines and errors cut by characters.
    const line = '€'.repeat(MAX_JOB_LINE_CHARS);
    const lines = Array.from({ length: Math.ceil(MAX_JOB_LINES_BYTES / (line.length * 3)) }, () => line);
    const error = '€'.repeat(MAX_JOB_ERROR_CHARS);
    const bytes = agentMessageBytes({
      job_event: {
        job_id: crypto.randomUUID(),
        phase: 'failed',
        progress: 100,
        lines,
        error,
        results: Array.from({ length: MAX_SERVICES_PER_STACK }, (_, i) => ({
          name: `s${String(i).padStart(62, '0')}`,
          action: 'replaced',
          ok: false,
          error,
        })),
      },
    });
    expect(bytes).toBeLessThan(MAX_AGENT_MESSAGE_BYTES / 4);
  });
});
