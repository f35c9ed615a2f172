import { describe, expect, it } from 'vitest';
import type { ServiceStateMsg } from '../../contracts/agent-protocol/index.js';
import { overallHealth, serviceHealth } from './stack-health.js';

const now = new Date('2026-01-01T10:00:00.000Z');

const state = (over: Partial<ServiceStateMsg> = {}): ServiceStateMsg => ({
  stack_id: 's',
  name: 'web',
  status: 'running',
  running: true,
  started_at: '2026-01-01T08:59:30.000Z',
  digest: 'd',
  restarts: 0,
  exit_code: -1,
  health: {
    url: 'http://127.0.0.1:8080/health',
    status_code: 200,
    latency_ms: 3,
    ok: true,
    error: '',
    checked_at: '2026-01-01T09:59:59.000Z',
  },
  actual: null,
  desired: true,
  ...over,
});

describe('service health', () => {
  it('running with a passing check is healthy, with uptime as duration text and the check', () => {
    expect(serviceHealth('web', true, state(), true, now)).toEqual({
      name: 'web',
      status: 'healthy',
      uptime: '1h0m30s',
      health_check: { url: 'http://127.0.0.1:8080/health', status_code: 200, latency_ms: 3 },
    });
  });

  it('a failing check is unhealthy and keeps the status code', () => {
    const v = serviceHealth(
      'web',
      true,
      state({ health: { ...state().health!, ok: false, status_code: 503 } }),
      true,
      now,
    );
    expect(v.status).toBe('unhealthy');
    expect(v.health_check?.status_code).toBe(503);
  });

  it('no check: running is healthy and the item omits health_check', () => {
    const v = serviceHealth('web', false, state({ health: null }), true, now);
    expect(v).toEqual({ name: 'web', status: 'healthy', uptime: '1h0m30s' });
  });

  it('before the first check: starting', () => {
    expect(serviceHealth('web', true, state({ health: null }), true, now).status).toBe('starting');
  });

  it('stopped, restarting, missing and unknown', () => {
    expect(serviceHealth('web', true, state({ running: false, status: 'exited' }), true, now)).toMatchObject({
      status: 'stopped',
      uptime: '0h0m0s',
    });
    expect(
      serviceHealth('web', true, state({ running: false, status: 'restarting' }), true, now).status,
    ).toBe('restarting');
    expect(serviceHealth('web', true, undefined, true, now).status).toBe('missing');
    expect(serviceHealth('web', true, undefined, null, now).status).toBe('unknown');
  });

  it('overall', () => {
    const h = serviceHealth('a', false, state({ health: null }), true, now);
    const u = serviceHealth('b', true, state({ running: false }), true, now);
    const k = serviceHealth('c', true, undefined, null, now);
    expect(overallHealth([h, h])).toBe('healthy');
    expect(overallHealth([h, u])).toBe('degraded');
    expect(overallHealth([u, u])).toBe('unhealthy');
    expect(overallHealth([h, k])).toBe('unknown');
    expect(overallHealth([])).toBe('unknown');
  });
});
