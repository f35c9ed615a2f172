import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_AGENT_MESSAGE_BYTES,
  MAX_ENV_PER_SERVICE,
  MAX_ENV_VALUE_BYTES,
  MAX_STACK_SPEC_BYTES,
  stackSpecBytes,
} from '../../src/contracts/agent-protocol/limits.js';
import { validateDefinition } from '../../src/server/stacks/definition/validate-definition.js';
import { toServiceSpec } from '../../src/server/stacks/service-spec.js';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { freePort, HTTP_SERVICE, orchestrator, type JobBody } from '../support/stacks.js';

/**
 * Finding 3 of the security review: one accepted stack could cut its worker off the control plane.
 * Here the largest stacks the limits allow go through a real agent over real mTLS, beside a small
 * stack whose health must stay known, and one variable or one byte more is refused.
 */

/** A process service that does nothing but run: `count` variables filled to `bytes` in total. */
function bigStackYaml(name: string, fill: number, count = MAX_ENV_PER_SERVICE): string {
  const env = Array.from(
    { length: count },
    (_, i) => `      V${i}: "${'x'.repeat(VALUE + (i === count - 1 ? fill : 0))}"`,
  );
  return `name: ${name}
stackkit: basement-kit
services:
  hold:
    command: [/bin/sleep, "3600"]
    resources: { cpu: 10m, memory: 16Mi }
    env:
${env.join('\n')}
`;
}
const VALUE = 500;
/** Line of the first variable in bigStackYaml, and of `services`. */
const FIRST_VARIABLE_LINE = 8;
const SERVICES_LINE = 3;

const specBytes = (source: string): number => {
  const result = validateDefinition(source);
  if (result.kind !== 'valid') throw new Error(JSON.stringify(result).slice(0, 2000));
  return stackSpecBytes(result.definition.services.map((s) => toServiceSpec(s)));
};
/** What the last variable needs on top of VALUE for the stack to take exactly MAX_STACK_SPEC_BYTES. */
const FILL = MAX_STACK_SPEC_BYTES - specBytes(bigStackYaml('probe', 0));

/** The small stack that shares the node: the fixture HTTP service with a health check. */
const smallStackYaml = (port: number) => `name: small
stackkit: basement-kit
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env: { PORT: "${port}" }
    ports: [${port}]
    resources: { cpu: 0.1, memory: 64Mi }
    health_check: { path: /health, port: ${port}, interval: 1s }
`;

describe('the largest stacks the limits allow, through a real agent', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let smallId: string;
  const bigIds: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        HEARTBEAT_INTERVAL: '1s',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
        // The test polls many stacks' health and drift; the per-client request limit is not its subject.
        RATE_LIMIT_REQUESTS: '0',
      },
    });
    api = orchestrator(t);
    const token = await api.post('/join-tokens', { pre_approved: true });
    expect(token.status).toBe(201);
    agent = AgentProcess.start({ server: t.url, token: token.body.token as string, name: 'limits-node' });
    await eventually(async () => {
      const res = await api.get('/workers');
      const w = (res.body.workers as { name: string; connected: boolean }[]).find(
        (x) => x.name === 'limits-node',
      );
      return w?.connected === true;
    }, 20_000);

    smallId = await create(smallStackYaml(await freePort()));
    expect((await deployAndWait(smallId)).status).toBe('succeeded');
    await eventually(async () => (await health(smallId)) === 'healthy');
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
  });

  async function create(source: string): Promise<string> {
    const res = await api.yaml('post', '/stacks', source);
    expect(res.status, res.text.slice(0, 2000)).toBe(201);
    return res.body.id as string;
  }

  async function deployAndWait(stackId: string): Promise<JobBody> {
    const res = await api.post(`/stacks/${stackId}/deploy`);
    expect(res.status, res.text).toBe(202);
    return api.jobUntil(res.body.id as string, ['succeeded', 'failed']);
  }

  async function health(stackId: string): Promise<string> {
    const res = await api.get(`/stacks/${stackId}/health`);
    expect(res.status).toBe(200);
    return res.body.overall as string;
  }

  async function drift(stackId: string): Promise<string> {
    const res = await api.get(`/stacks/${stackId}/drift`);
    expect(res.status).toBe(200);
    return res.body.status as string;
  }

  /** The agent's stream never broke: a message over a limit would have ended it. */
  const streamErrors = () => agent.records().filter((r) => r.msg === 'stream error');

  it('accepts the largest definition and refuses one byte or one variable more with 422', async () => {
    const largest = bigStackYaml('big-0', FILL);
    expect(specBytes(largest)).toBe(MAX_STACK_SPEC_BYTES);
    const ok = await api.yaml('post', '/unifier/validate', largest);
    expect(ok.status, ok.text.slice(0, 2000)).toBe(200);

    // The ids of the stacks there are: their other fields (drift checks, status) move on meanwhile.
    const stackIds = async () =>
      ((await api.get('/stacks')).body.stacks as { id: string }[]).map((x) => x.id).sort();
    const stacksBefore = await stackIds();
    const oneByte = await api.yaml('post', '/stacks', bigStackYaml('refused', FILL + 1));
    expect(oneByte.status).toBe(422);
    expect(oneByte.headers['content-type']).toContain('application/problem+json');
    expect(oneByte.body).toMatchObject({ code: 'validation_failed', title: 'Validation failed' });
    expect(oneByte.body.errors).toEqual([
      {
        path: 'services',
        category: 'resource_constraint',
        message: expect.stringContaining(
          `the services take ${MAX_STACK_SPEC_BYTES + 1} bytes as a job sends them to an agent`,
        ) as string,
        line: SERVICES_LINE + 1,
        column: 3,
      },
    ]);

    const oneVariable = await api.yaml(
      'post',
      '/stacks',
      bigStackYaml('refused', 0, MAX_ENV_PER_SERVICE + 1).replace(/"x{500}"/g, '"x"'),
    );
    expect(oneVariable.status).toBe(422);
    expect(oneVariable.body.errors).toEqual([
      {
        path: `services.hold.env.V${MAX_ENV_PER_SERVICE}`,
        category: 'resource_constraint',
        message: `a service may have at most ${MAX_ENV_PER_SERVICE} environment variables; this is variable ${MAX_ENV_PER_SERVICE + 1} of ${MAX_ENV_PER_SERVICE + 1}`,
        line: FIRST_VARIABLE_LINE + MAX_ENV_PER_SERVICE,
        column: 7,
      },
    ]);
    // Refused means nothing was created.
    expect(await stackIds()).toEqual(stacksBefore);
  });

  it('deploys the largest stack while the other stack on the node stays known and healthy', async () => {
    bigIds.push(await create(bigStackYaml('big-0', FILL)));
    const job = await deployAndWait(bigIds[0]);
    expect(job, JSON.stringify(job)).toMatchObject({ status: 'succeeded', progress: 100 });
    expect(job.results).toEqual([{ name: 'hold', action: 'created', ok: true, error: null }]);

    // Health comes from the agent's state reports: healthy means one carrying the big stack arrived.
    await eventually(async () => (await health(bigIds[0])) === 'healthy', 20_000);
    expect(await health(smallId)).toBe('healthy');
    // Drift compares the full report: all the big stack's variables came back as they were sent.
    await eventually(async () => (await drift(bigIds[0])) === 'in_sync', 20_000);
    expect(streamErrors()).toEqual([]);
  });

  it('keeps reporting when more of them share the node than one message could carry in full', async () => {
    // Enough largest stacks that their full state would not fit in one message.
    const count = Math.floor(MAX_AGENT_MESSAGE_BYTES / MAX_STACK_SPEC_BYTES) + 1;
    for (let i = bigIds.length; i < count; i++) bigIds.push(await create(bigStackYaml(`big-${i}`, FILL)));
    const jobs = await Promise.all(bigIds.slice(1).map((id) => deployAndWait(id)));
    for (const job of jobs) expect(job, JSON.stringify(job)).toMatchObject({ status: 'succeeded' });

    for (const id of bigIds) await eventually(async () => (await health(id)) === 'healthy', 20_000);
    expect(await health(smallId)).toBe('healthy');
    // The largest services went as digests, and drift still finds them in sync.
    expect(agent.logged('state report over its budget; the largest services are reported with digests')).toBe(
      true,
    );
    for (const id of bigIds) await eventually(async () => (await drift(id)) === 'in_sync', 20_000);
    expect(streamErrors()).toEqual([]);
  });

  it('fails a job too big for the channel, stored before the limits, instead of cutting the node off', async () => {
    const legacyId = await create(
      `name: legacy\nstackkit: basement-kit\nservices:\n  hold: { command: [/bin/sleep, "3600"] }\n`,
    );
    // A revision stored before the limits, as the validator then accepted (aliases expand a small
    // file a long way): a command over the message limit. Written straight into its row.
    const result = validateDefinition(bigStackYaml('legacy', 0, 1));
    if (result.kind !== 'valid') throw new Error('expected a valid definition');
    const definition = result.definition;
    const value = 'x'.repeat(MAX_ENV_VALUE_BYTES);
    const count = Math.ceil(MAX_AGENT_MESSAGE_BYTES / MAX_ENV_VALUE_BYTES) + 1;
    definition.services[0].env = Object.fromEntries(
      Array.from({ length: count }, (_, i) => [`V${i}`, value]),
    );
    await t.app
      .get(DataSource)
      .query(`UPDATE stack_revisions SET definition = $1::jsonb WHERE stack_id = $2`, [
        JSON.stringify(definition),
        legacyId,
      ]);

    const job = await deployAndWait(legacyId);
    expect(job.status).toBe('failed');
    expect(job.error).toMatch(
      new RegExp(
        `^the job's command takes \\d+ bytes and an agent accepts at most ${MAX_AGENT_MESSAGE_BYTES}`,
      ),
    );
    // The node still reports: the stacks it runs stay known.
    const reported = Date.now();
    await eventually(async () => {
      const res = await api.get(`/stacks/${smallId}/health`);
      return Date.parse(res.body.reported_at as string) > reported;
    });
    expect(await health(smallId)).toBe('healthy');
    expect(await health(bigIds[0])).toBe('healthy');
    expect(streamErrors()).toEqual([]);
  });
});
