import { describe, expect, it } from 'vitest';
import {
  agentMessageBytes,
  type ServiceStateMsg,
  type StateReportMsg,
} from '../../src/contracts/agent-protocol/index.js';
import { fitStateReport } from '../../src/agent/state-report.js';
import { detectDrift } from '../../src/server/drift/detect-drift.js';
import type { ServiceDefinition } from '../../src/server/stacks/definition/definition.types.js';
import { serviceDigest, toServiceSpec } from '../../src/server/stacks/service-spec.js';

/**
 * The agent digests a trimmed service's command and environment, and the service digests the
 * definition: the two sides must agree on what is the same and what is drift.
 */

const definition = (over: Partial<ServiceDefinition> = {}): ServiceDefinition => ({
  name: 'app',
  image: null,
  command: ['/bin/app', '--port', '9000'],
  env: { BIG: 'x'.repeat(100_000), MODE: 'production', DB_PASSWORD: '${DB_PASSWORD}' },
  ports: [{ container: 9000, host: 9000, protocol: 'tcp' }],
  resources: { cpu: 0.5, memory_bytes: 2 ** 28 },
  health_check: null,
  metrics: null,
  public: null,
  depends_on: [],
  placement: { labels: {} },
  restart: 'on-failure',
  driver: 'process',
  origin: 'definition',
  ...over,
});

/** What the node runs for the definition: references resolved from the agent's environment. */
const observed = (
  def: ServiceDefinition,
  env: Record<string, string>,
  command = def.command,
): ServiceStateMsg => ({
  stack_id: 'stack',
  name: def.name,
  status: 'running',
  running: true,
  started_at: '2026-01-01T00:00:00.000Z',
  digest: serviceDigest(def),
  restarts: 0,
  exit_code: -1,
  health: null,
  actual: { image: '', command, env, ports: def.ports, cpu: 0.5, memory_bytes: 2 ** 28 },
  desired: true,
});

/** The agent's report, fitted into a budget smaller than the service: it goes as digests. */
const reported = (def: ServiceDefinition, state: ServiceStateMsg): ServiceStateMsg[] => {
  const report: StateReportMsg = { services: [state], stack_ids: ['stack'], last_jobs: {} };
  const fitted = fitStateReport(
    report,
    10_000,
    (r) => agentMessageBytes({ state: r }),
    (_, name) => (name === def.name ? toServiceSpec(def) : undefined),
  );
  expect(fitted.trimmed).toBe(1);
  return fitted.report.services;
};

const resolved = (def: ServiceDefinition) => ({ ...def.env, DB_PASSWORD: 'resolved-on-the-node' });

describe('drift on a report that carries digests', () => {
  it('finds nothing when the node runs the definition, whatever the references resolve to', () => {
    const def = definition();
    expect(detectDrift([def], reported(def, observed(def, resolved(def))))).toEqual([]);
  });

  it('finds a changed, added or missing variable as one env item, and a changed command', () => {
    const def = definition();
    const changed = reported(def, observed(def, { ...resolved(def), MODE: 'debug' }));
    expect(detectDrift([def], changed)).toEqual([
      expect.objectContaining({ resource: 'app', kind: 'modified', field: 'env' }),
    ]);
    const added = reported(def, observed(def, { ...resolved(def), EXTRA: '1' }));
    expect(detectDrift([def], added).map((f) => f.field)).toEqual(['env']);
    const { DB_PASSWORD: _, ...withoutSecret } = resolved(def);
    expect(detectDrift([def], reported(def, observed(def, withoutSecret))).map((f) => f.field)).toEqual([
      'env',
    ]);
    const command = reported(def, observed(def, resolved(def), ['/bin/app', '--port', '9001']));
    expect(detectDrift([def], command).map((f) => f.field)).toEqual(['command']);
    // The digests never carry the resolved secret: the item shows digests only.
    expect(JSON.stringify(detectDrift([def], changed))).not.toContain('resolved-on-the-node');
  });

  it('still compares ports, cpu and memory field by field', () => {
    const def = definition();
    const state = observed(def, resolved(def));
    state.actual = { ...state.actual!, ports: [{ container: 9000, host: 9001, protocol: 'tcp' }] };
    expect(detectDrift([def], reported(def, state))).toEqual([
      {
        resource: 'app',
        kind: 'modified',
        field: 'ports',
        desired: '9000:9000/tcp',
        actual: '9001:9000/tcp',
      },
    ]);
  });
});
