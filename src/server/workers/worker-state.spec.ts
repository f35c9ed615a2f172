import { describe, expect, it } from 'vitest';
import { assess, nextState, type AgentReport, type WorkerState } from './worker-state.js';

const thresholds = { degradedPercent: 90, unhealthyPercent: 98 };
const report = (
  over: Partial<AgentReport['metrics']> = {},
  checks: Record<string, boolean> = {},
): AgentReport => ({
  metrics: { cpu_percent: 10, memory_percent: 20, disk_percent: 30, containers_running: 0, ...over },
  checks,
  criticalChecks: ['driver'],
});

describe('worker states', () => {
  it('pending leaves only through approval', () => {
    expect(nextState('pending', { type: 'heartbeat', report: report() }, thresholds)).toBe('pending');
    expect(nextState('pending', { type: 'missed_heartbeats' }, thresholds)).toBe('pending');
    // Approved but not heard from yet: unreachable until the first heartbeat.
    expect(nextState('pending', { type: 'approved' }, thresholds)).toBe('unreachable');
  });

  it.each<WorkerState>(['healthy', 'degraded', 'unhealthy'])(
    '%s becomes unreachable after missed heartbeats',
    (s) => {
      expect(nextState(s, { type: 'missed_heartbeats' }, thresholds)).toBe('unreachable');
    },
  );

  it('unreachable comes back with the next heartbeat, to the state the report gives', () => {
    expect(nextState('unreachable', { type: 'heartbeat', report: report() }, thresholds)).toBe('healthy');
    expect(
      nextState('unreachable', { type: 'heartbeat', report: report({ disk_percent: 99 }) }, thresholds),
    ).toBe('unhealthy');
  });

  it('approving an approved worker changes nothing', () => {
    expect(nextState('degraded', { type: 'approved' }, thresholds)).toBe('degraded');
  });

  it('assesses metrics against the thresholds', () => {
    expect(assess(report(), thresholds)).toBe('healthy');
    expect(assess(report({ cpu_percent: 95 }), thresholds)).toBe('degraded');
    expect(assess(report({ cpu_percent: 100 }), thresholds)).toBe('degraded'); // busy CPU is never critical
    expect(assess(report({ memory_percent: 90 }), thresholds)).toBe('degraded');
    expect(assess(report({ memory_percent: 98 }), thresholds)).toBe('unhealthy');
    expect(assess(report({ disk_percent: 99.5 }), thresholds)).toBe('unhealthy');
  });

  it('assesses the agent checks: any failure degrades, a critical one makes it unhealthy', () => {
    expect(assess(report({}, { data_dir: false }), thresholds)).toBe('degraded');
    expect(assess(report({}, { driver: false }), thresholds)).toBe('unhealthy');
    expect(assess(report({}, { driver: true, data_dir: true }), thresholds)).toBe('healthy');
  });
});
