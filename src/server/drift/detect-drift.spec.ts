import { describe, expect, it } from 'vitest';
import type { ServiceStateMsg } from '../../contracts/agent-protocol/index.js';
import type { ServiceDefinition } from '../stacks/definition/definition.types.js';
import { serviceDigest } from '../stacks/service-spec.js';
import { detectDrift, normalizeImage } from './detect-drift.js';

const web = (over: Partial<ServiceDefinition> = {}): ServiceDefinition => ({
  name: 'web',
  image: 'localhost/app:1',
  command: ['httpd', '-f'],
  env: { GREETING: 'hello', DB_PASSWORD: '${DB_PASSWORD}' },
  ports: [{ container: 8080, host: 18080, protocol: 'tcp' }],
  resources: { cpu: 0.5, memory_bytes: 64 * 1024 * 1024 },
  health_check: null,
  metrics: null,
  public: null,
  depends_on: [],
  placement: { labels: {} },
  restart: 'on-failure',
  driver: 'docker',
  origin: 'definition',
  ...over,
});

/** What an agent reports for a service that runs exactly as `def` says (references resolved). */
const running = (def: ServiceDefinition, over: Partial<ServiceStateMsg> = {}): ServiceStateMsg => ({
  stack_id: 's',
  name: def.name,
  status: 'running',
  running: true,
  started_at: '2026-01-01T00:00:00.000Z',
  digest: serviceDigest(def),
  restarts: 0,
  exit_code: -1,
  health: null,
  actual: {
    image: def.image ?? '',
    command: def.command,
    env: { ...def.env, DB_PASSWORD: 'resolved-on-the-node' },
    ports: def.ports,
    cpu: def.resources.cpu,
    memory_bytes: def.resources.memory_bytes,
  },
  desired: true,
  ...over,
});

describe('drift detection', () => {
  it('finds nothing when the node runs exactly the definition', () => {
    expect(detectDrift([web()], [running(web())])).toEqual([]);
  });

  it('missing: absent, or stopped for good; a restarting service is not drift', () => {
    expect(detectDrift([web()], [])).toEqual([
      { resource: 'web', kind: 'missing', field: '', desired: 'running', actual: 'absent' },
    ]);
    expect(detectDrift([web()], [running(web(), { running: false, status: 'exited' })])).toEqual([
      { resource: 'web', kind: 'missing', field: '', desired: 'running', actual: 'exited' },
    ]);
    expect(detectDrift([web()], [running(web(), { running: false, status: 'restarting' })])).toEqual([]);
  });

  it('a one-shot that completed (restart never, exit 0, waited for by service_completed_successfully) is no drift', () => {
    const seed = web({ name: 'seed', restart: 'never' });
    const app = web({
      name: 'app',
      depends_on: ['seed'],
      start_conditions: {
        seed: { condition: 'service_completed_successfully', required: true, restart: false },
      },
    });
    const done = running(seed, { running: false, status: 'exited', exit_code: 0 });
    expect(detectDrift([seed, app], [done, running(app)])).toEqual([]);
    // Failed, or nobody waits for it to complete: it is missing as before.
    const failed = running(seed, { running: false, status: 'exited', exit_code: 3 });
    expect(detectDrift([seed, app], [failed, running(app)])).toMatchObject([
      { resource: 'seed', kind: 'missing' },
    ]);
    expect(detectDrift([seed], [done])).toMatchObject([{ resource: 'seed', kind: 'missing' }]);
  });

  it('modified: one item per differing field, with desired and actual', () => {
    const state = running(web());
    state.actual = {
      ...state.actual!,
      image: 'localhost/app:2',
      env: { GREETING: 'changed by hand', DB_PASSWORD: 'x', EXTRA: '1' },
      ports: [{ container: 8080, host: 19090, protocol: 'tcp' }],
      memory_bytes: 128 * 1024 * 1024,
    };
    expect(detectDrift([web()], [state])).toEqual([
      { resource: 'web', kind: 'modified', field: 'env.EXTRA', desired: null, actual: '1' },
      {
        resource: 'web',
        kind: 'modified',
        field: 'env.GREETING',
        desired: 'hello',
        actual: 'changed by hand',
      },
      {
        resource: 'web',
        kind: 'modified',
        field: 'image',
        desired: 'localhost/app:1',
        actual: 'localhost/app:2',
      },
      { resource: 'web', kind: 'modified', field: 'memory', desired: '67108864', actual: '134217728' },
      {
        resource: 'web',
        kind: 'modified',
        field: 'ports',
        desired: '18080:8080/tcp',
        actual: '19090:8080/tcp',
      },
    ]);
  });

  it('a variable taken from a reference is compared for presence only, and secrets are never shown', () => {
    const state = running(web());
    state.actual = { ...state.actual!, env: { GREETING: 'hello' } };
    expect(detectDrift([web()], [state])).toEqual([
      {
        resource: 'web',
        kind: 'modified',
        field: 'env.DB_PASSWORD',
        desired: '${DB_PASSWORD}',
        actual: null,
      },
    ]);
    const literal = web({ env: { API_TOKEN: 'desired-secret' } });
    const changed = running(literal);
    changed.actual = { ...changed.actual!, env: { API_TOKEN: 'actual-secret' } };
    expect(detectDrift([literal], [changed])).toEqual([
      {
        resource: 'web',
        kind: 'modified',
        field: 'env.API_TOKEN',
        desired: '[REDACTED]',
        actual: '[REDACTED]',
      },
    ]);
  });

  it("a port's address is compared only where the definition sets one", () => {
    const addressed = web({
      ports: [{ container: 8080, host: 18080, protocol: 'tcp', address: '127.0.0.1' }],
    });
    // Published where the definition says: no drift.
    expect(detectDrift([addressed], [running(addressed)])).toEqual([]);
    // Published on every interface instead: drift, naming both.
    const everywhere = running(addressed);
    everywhere.actual = {
      ...everywhere.actual!,
      ports: [{ container: 8080, host: 18080, protocol: 'tcp', address: '0.0.0.0' }],
    };
    expect(detectDrift([addressed], [everywhere])).toEqual([
      {
        resource: 'web',
        kind: 'modified',
        field: 'ports',
        desired: '127.0.0.1:18080:8080/tcp',
        actual: '0.0.0.0:18080:8080/tcp',
      },
    ]);
    // Without an address in the definition, the agent's default address is not drift.
    const plain = running(web());
    plain.actual = {
      ...plain.actual!,
      ports: [{ container: 8080, host: 18080, protocol: 'tcp', address: '10.1.2.3' }],
    };
    expect(detectDrift([web()], [plain])).toEqual([]);
  });

  it('keeps the digest of a service whose ports have no address what it was before addresses existed', () => {
    // Changing it would make every running service look changed, and the next deploy replace it.
    expect(serviceDigest(web({ env: { GREETING: 'hello' } }))).toBe(
      'sha256:46a94ea201ac7bb0e4eceb790d73b2b7b52c5f042798ce56186ffb860c150905',
    );
  });

  it('the digest speaks only when no field does', () => {
    const state = running(web(), { digest: 'sha256:other' });
    expect(detectDrift([web()], [state])).toEqual([
      {
        resource: 'web',
        kind: 'modified',
        field: 'digest',
        desired: serviceDigest(web()),
        actual: 'sha256:other',
      },
    ]);
  });

  it('unexpected: something with the stack markers the definition does not have', () => {
    const extra = running(web({ name: 'intruder' }), { desired: false });
    expect(detectDrift([web()], [running(web()), extra])).toEqual([
      { resource: 'intruder', kind: 'unexpected', field: '', desired: null, actual: 'running' },
    ]);
  });

  it('two containers with the same labels are one unexpected resource', () => {
    const extra = running(web({ name: 'intruder' }), { desired: false });
    expect(detectDrift([web()], [running(web()), extra, { ...extra }])).toHaveLength(1);
  });

  it('normalizes image names', () => {
    expect(normalizeImage('nginx')).toBe('nginx:latest');
    expect(normalizeImage('docker.io/library/nginx:1.27')).toBe('nginx:1.27');
    expect(normalizeImage('localhost:5000/app')).toBe('localhost:5000/app:latest');
    expect(normalizeImage('app@sha256:abc')).toBe('app@sha256:abc');
  });
});
