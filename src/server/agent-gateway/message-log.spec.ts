import { describe, expect, it } from 'vitest';
import { redactForTrace, summarize } from './message-log.js';

describe('agent message records', () => {
  it('summarizes without values', () => {
    expect(
      summarize({
        job: {
          job_id: 'j1',
          type: 'provision',
          stack_id: 's1',
          stack_name: 'web',
          revision: 2,
          services: [],
          timeout_ms: 1000,
          attempt: 1,
          keep: [],
          replace: [],
        },
      }),
    ).toEqual({
      kind: 'job',
      job_id: 'j1',
      job_type: 'provision',
      stack_id: 's1',
      revision: 2,
      services: 0,
      attempt: 1,
    });
    expect(
      summarize({
        heartbeat: {
          sequence: 7,
          metrics: { cpu_percent: 1, memory_percent: 2, disk_percent: 3, containers_running: 0 },
          checks: [
            { name: 'disk', ok: true, critical: false, detail: '' },
            { name: 'driver', ok: false, critical: true, detail: 'x' },
          ],
        },
      }),
    ).toMatchObject({ kind: 'heartbeat', sequence: 7, failing_checks: ['driver'] });
  });

  it('redacts secrets and literal environment values from trace bodies, keeping references', () => {
    const body = redactForTrace({
      welcome: { worker_id: 'w', status: 'healthy', probe_key: 'k3y', heartbeat_interval_ms: 10 },
      job: {
        services: [{ name: 'db', env: { PASSWORD: 'hunter2', MODE: 'prod', API_KEY: '${API_KEY}' } }],
      },
      probe: { targets: [{ address: '127.0.0.1:1', challenge: 'c', answer: 'a' }] },
    });
    const text = JSON.stringify(body);
    for (const secret of ['k3y', 'hunter2', 'prod', '"c"', '"a"']) expect(text).not.toContain(secret);
    expect(text).toContain('${API_KEY}');
    expect(text).toContain('127.0.0.1:1');
  });
});
