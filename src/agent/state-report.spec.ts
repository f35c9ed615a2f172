import { describe, expect, it } from 'vitest';
import { commandDigest, envDigest } from '../contracts/agent-protocol/config-digest.js';
import {
  agentMessageBytes,
  type ServiceSpecMsg,
  type ServiceStateMsg,
  type StateReportMsg,
} from '../contracts/agent-protocol/index.js';
import { fitStateReport, withReferences } from './state-report.js';

const measure = (report: StateReportMsg) => agentMessageBytes({ state: report });

/** A running process service whose environment holds `bytes` of values. */
const state = (stackId: string, name: string, bytes: number): ServiceStateMsg => ({
  stack_id: stackId,
  name,
  status: 'running',
  running: true,
  started_at: '2026-01-01T00:00:00.000Z',
  digest: `sha256:${'d'.repeat(64)}`,
  restarts: 0,
  exit_code: -1,
  health: null,
  actual: {
    image: '',
    command: ['/bin/app', '--name', name],
    env: { FILL: 'x'.repeat(bytes), TOKEN: 'resolved-secret' },
    ports: [],
    cpu: 0.1,
    memory_bytes: 2 ** 20,
  },
  desired: true,
});

const wanted = (name: string): ServiceSpecMsg => ({
  name,
  image: '',
  command: ['/bin/app', '--name', name],
  env: { FILL: 'whatever the definition says', TOKEN: '${TOKEN}' },
  ports: [],
  cpu: 0.1,
  memory_bytes: 2 ** 20,
  restart: 'on-failure',
  health_check: null,
  digest: '',
});

const report = (services: ServiceStateMsg[]): StateReportMsg => {
  const stacks = [...new Set(services.map((s) => s.stack_id))];
  return {
    services,
    stack_ids: stacks,
    last_jobs: Object.fromEntries(stacks.map((id) => [id, `job-of-${id}`])),
  };
};

describe('fitting a state report into its budget', () => {
  it('sends a report within the budget as it is', () => {
    const small = report([state('a', 'web', 1000), state('b', 'web', 2000)]);
    expect(fitStateReport(small, measure(small), measure, () => undefined)).toEqual({
      report: small,
      trimmed: 0,
      dropped: [],
    });
  });

  it('replaces the largest services’ command and environment by digests, only as many as needed', () => {
    const full = report([
      state('a', 'small', 1000),
      state('b', 'huge', 300_000),
      state('c', 'large', 200_000),
      state('d', 'medium', 100_000),
    ]);
    const budget = 250_000;
    expect(measure(full)).toBeGreaterThan(budget);
    const fitted = fitStateReport(full, budget, measure, (_, name) => wanted(name));
    expect(measure(fitted.report)).toBeLessThanOrEqual(budget);
    expect(fitted.trimmed).toBe(2);
    expect(fitted.dropped).toEqual([]);
    expect(fitted.report.stack_ids).toEqual(full.stack_ids);
    expect(fitted.report.last_jobs).toEqual(full.last_jobs);
    const byName = new Map(fitted.report.services.map((s) => [s.name, s]));
    expect(byName.get('small')).toEqual(full.services[0]);
    expect(byName.get('medium')).toEqual(full.services[3]);
    expect(byName.get('huge')?.actual).toEqual({
      ...full.services[1].actual,
      command: [],
      env: {},
      trimmed: true,
      command_digest: commandDigest(['/bin/app', '--name', 'huge']),
      // The resolved secret is digested as the reference the definition wrote.
      env_digest: envDigest({ FILL: 'x'.repeat(300_000), TOKEN: '${TOKEN}' }),
    });
    expect(byName.get('large')?.actual?.trimmed).toBe(true);
    // Everything but the command and environment is reported as it was.
    expect({ ...byName.get('huge'), actual: undefined }).toEqual({ ...full.services[1], actual: undefined });
  });

  it('leaves whole stacks out, largest first, when digests are not enough', () => {
    // Many services in stack "many", a few in "few": even trimmed, they do not all fit.
    const many = Array.from({ length: 400 }, (_, i) => state('many', `s${i}`, 500));
    const full = report([state('few', 'web', 500), ...many]);
    const fitted = fitStateReport(full, 20_000, measure, () => undefined);
    expect(measure(fitted.report)).toBeLessThanOrEqual(20_000);
    expect(fitted.dropped).toEqual(['many']);
    // Nothing of the stack is left, so the service shows it as unknown rather than missing.
    expect(fitted.report.stack_ids).toEqual(['few']);
    expect(fitted.report.last_jobs).toEqual({ few: 'job-of-few' });
    expect(fitted.report.services.map((s) => s.name)).toEqual(['web']);
  });
});

describe('withReferences', () => {
  it('reports a variable resolved from the agent environment as its reference, and every other value as it is', () => {
    const reported = withReferences(state('s1', 'web', 3), wanted('web'));
    expect(reported.actual?.env).toEqual({ FILL: 'xxx', TOKEN: '${TOKEN}' });
    expect(JSON.stringify(reported)).not.toContain('resolved-secret');
    // Not desired, or no such variable on the container: nothing to hide, nothing invented.
    expect(withReferences(state('s1', 'web', 3), undefined).actual?.env.TOKEN).toBe('resolved-secret');
    const without = state('s1', 'web', 3);
    delete without.actual!.env.TOKEN;
    expect(withReferences(without, wanted('web')).actual?.env).toEqual({ FILL: 'xxx' });
  });
});
