import { describe, expect, it } from 'vitest';
import type {
  JobView,
  StackHealthView,
  Topology,
  TunnelStatus,
  UrlValidation,
  WorkerView,
} from '../../contracts/api/index.js';
import { isJob, isStackHealth, isTopology, isTunnelStatus, isUrlValidation, isWorker } from './views.js';

// Answers typed with the service's contract, so these examples change when the contract does.
const job: JobView = {
  id: 'j1',
  type: 'provision',
  stack_id: 's1',
  stack_name: 'web',
  revision: 2,
  worker_id: null,
  status: 'queued',
  progress: 0,
  attempts: 0,
  max_attempts: 3,
  error: null,
  results: [{ name: 'api', action: 'started', ok: true, error: null }],
  created_at: '2026-01-01T00:00:00.000Z',
  dispatched_at: null,
  started_at: null,
  finished_at: null,
};

const worker: WorkerView = {
  id: 'w1',
  name: 'node-a',
  status: 'healthy',
  last_heartbeat: '2026-01-01T00:00:00.000Z',
  metrics: { cpu_percent: 1, memory_percent: 2, disk_percent: 3, containers_running: 0 },
  hostname: 'node-a.example',
  address: '10.0.0.1',
  os: 'linux',
  arch: 'x64',
  driver: 'process',
  labels: {},
  version: '0.1.0',
  connected: true,
  approved_at: null,
  created_at: '2026-01-01T00:00:00.000Z',
};

describe('stackctl answer guards', () => {
  it('accept what the service answers, and words of a newer service', () => {
    expect(isJob(job)).toBe(true);
    expect(isJob({ ...job, status: 'paused', extra: 1 })).toBe(true);
    expect(isWorker(worker)).toBe(true);
    expect(isWorker({ ...worker, metrics: null })).toBe(true);
  });

  it('refuse an answer missing a field stackctl reads or holding a wrong type', () => {
    const { stack_name: _, ...nameless } = job;
    expect(isJob(nameless)).toBe(false);
    expect(isJob({ ...job, revision: 1.5 })).toBe(false);
    expect(isJob({ ...job, results: [{ name: 'api' }] })).toBe(false);
    expect(isWorker({ ...worker, metrics: undefined })).toBe(false);
    expect(isJob(null)).toBe(false);
    expect(isJob([job])).toBe(false);
  });

  it('take an optional field as absent or well-formed', () => {
    const health: StackHealthView = {
      stack_id: 's1',
      overall: 'healthy',
      services: [{ name: 'api', status: 'healthy', uptime: '0h0m1s' }],
      worker_id: 'w1',
      reported_at: null,
    };
    expect(isStackHealth(health)).toBe(true);
    const checked = { name: 'api', status: 'healthy', uptime: '0h0m1s' };
    const withCheck = { url: 'http://127.0.0.1/', status_code: 200, latency_ms: 3 };
    expect(isStackHealth({ ...health, services: [{ ...checked, health_check: withCheck }] })).toBe(true);
    expect(isStackHealth({ ...health, services: [{ ...checked, health_check: { url: 'x' } }] })).toBe(false);
  });
});

describe('stackctl tunnel answer guards', () => {
  const status: TunnelStatus = {
    state: 'running',
    provider: 'ssh',
    public_url: 'https://tunnel.example.com',
    agent_endpoint: 'relay.example.com:5263',
    started_at: '2026-01-01T00:00:00.000Z',
    last_error: null,
  };
  const topology: Topology = {
    environment: { kind: 'vm', evidence: ['/sys/hypervisor/type is not empty'] },
    has_nat: true,
    local_ips: ['10.0.0.5', '127.0.0.1'],
    public_ip: '203.0.113.7',
    default_gateway: '10.0.0.1',
    private_subnet: '10.0.0.0/24',
    recommended_mode: 'tunnel',
    reason: 'behind NAT',
  };
  const validation: UrlValidation = {
    url: null,
    valid: false,
    reachable: false,
    checks: [{ name: 'present', ok: false, detail: 'no URL was given' }],
  };

  it('accept the contract, and states or kinds a newer service adds', () => {
    expect(isTunnelStatus(status)).toBe(true);
    expect(isTunnelStatus({ ...status, state: 'draining' })).toBe(true);
    expect(isTopology(topology)).toBe(true);
    expect(isTopology({ ...topology, public_ip: null, environment: { kind: 'wasm', evidence: [] } })).toBe(
      true,
    );
    expect(isUrlValidation(validation)).toBe(true);
  });

  it('refuse a missing or mistyped field', () => {
    const { last_error: _, ...noError } = status;
    expect(isTunnelStatus(noError)).toBe(false);
    expect(isTunnelStatus({ ...status, started_at: 0 })).toBe(false);
    expect(isTopology({ ...topology, has_nat: 'yes' })).toBe(false);
    expect(isTopology({ ...topology, environment: { kind: 'vm' } })).toBe(false);
    expect(isUrlValidation({ ...validation, checks: [{ name: 'present', ok: 'no', detail: '' }] })).toBe(
      false,
    );
  });
});
