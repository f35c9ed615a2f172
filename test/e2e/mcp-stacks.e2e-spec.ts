import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { connectMcp, type McpClient } from '../support/mcp-client.js';
import {
  connectedAgent,
  freePort,
  httpGet,
  orchestrator,
  servicePid,
  type JobBody,
  webStackYaml,
  FAST_AGENT_ENV,
} from '../support/stacks.js';

// The stack, drift and job tools over MCP (the SDK's own client), against the real app and a real process-driver agent; every effect is checked over HTTP.
const READ_TOOLS = [
  'list_stacks',
  'get_stack',
  'list_stack_revisions',
  'get_stack_health',
  'get_stack_drift',
  'list_jobs',
  'get_job',
  'get_job_logs',
];
const WRITE_TOOLS = [
  'create_stack',
  'update_stack',
  'deploy_stack',
  'destroy_stack',
  'ignore_stack_drift',
  'unignore_stack_drift',
  'resolve_stack_drift',
  'cancel_job',
  'cleanup_job',
];

interface Drift {
  status: string;
  revision: number;
  items: { resource: string; kind: string; detected_at: string }[];
}

describe('MCP stack, drift and job tools', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let workerId: string;
  let mcp: McpClient;
  const clients: McpClient[] = [];
  let port: number;
  let stackId: string;
  let firstJobId: string;
  const source = { v1: '', v2: '' };

  const connect = async (token: string) => {
    const client = await connectMcp(t.url, token);
    clients.push(client);
    return client;
  };
  const jobUntil = async (id: string, statuses: string[]): Promise<JobBody> => {
    let job: JobBody | undefined;
    await eventually(async () => {
      job = await mcp.ok<JobBody>('get_job', { id });
      return statuses.includes(job.status);
    }, 30_000);
    return job!;
  };

  beforeAll(async () => {
    t = await startTestApp({ env: FAST_AGENT_ENV });
    api = orchestrator(t);
    ({ agent, workerId } = await connectedAgent(t, 'mcp-node'));
    mcp = await connect((await t.token()).access_token);
    port = await freePort();
    source.v1 = webStackYaml('mcp-web', port);
    source.v2 = webStackYaml('mcp-web', port, { version: '2' });
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await agent?.stop();
    await t?.close();
  });

  it('lists the tools per scope, with annotations true to their effect', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((x) => x.name)).toEqual(expect.arrayContaining([...READ_TOOLS, ...WRITE_TOOLS]));
    const annotations = (name: string) => tools.find((x) => x.name === name)?.annotations;
    expect(annotations('get_stack')).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    for (const name of ['deploy_stack', 'destroy_stack', 'resolve_stack_drift', 'cancel_job', 'cleanup_job'])
      expect(annotations(name), name).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
        openWorldHint: false,
      });
    expect(annotations('create_stack')).toMatchObject({ destructiveHint: false, idempotentHint: false });
    const readOnly = await connect((await t.token(undefined, 'orchestrator:read')).access_token);
    const names = (await readOnly.listTools()).tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(READ_TOOLS));
    expect(names.filter((n) => WRITE_TOOLS.includes(n))).toEqual([]);
    const tunnelOnly = await connect((await t.token(undefined, 'tunnel:read')).access_token);
    const tunnelNames = (await tunnelOnly.listTools()).tools.map((x) => x.name);
    expect(tunnelNames.filter((n) => [...READ_TOOLS, ...WRITE_TOOLS].includes(n))).toEqual([]);
  });

  it('create_stack and deploy_stack: the job succeeds, the service answers HTTP and is healthy', async () => {
    const { warnings, ...created } = await mcp.ok<{ id: string; warnings?: unknown[] }>('create_stack', {
      definition: source.v1,
    });
    stackId = created.id;
    // A write answers the stack and what validation warned of; a read the stack alone.
    expect(warnings).toEqual([]);
    expect(created).toEqual((await api.get(`/stacks/${stackId}`)).body);
    expect(created).toMatchObject({ name: 'mcp-web', status: 'draft', revision: 1, services: ['web'] });

    const queued = await mcp.ok<JobBody>('deploy_stack', { id: stackId });
    expect(queued).toMatchObject({ type: 'provision', stack_id: stackId, status: 'queued' });
    firstJobId = queued.id;
    const job = await jobUntil(queued.id, ['succeeded', 'failed']);
    expect(job).toMatchObject({ status: 'succeeded', worker_id: workerId });
    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '1' });
    await eventually(async () => (await api.get(`/stacks/${stackId}/health`)).body.overall === 'healthy');
    const health = await mcp.ok('get_stack_health', { id: stackId });
    expect(health).toMatchObject({ stack_id: stackId, overall: 'healthy', worker_id: workerId });
    expect(await mcp.ok('get_stack', { id: stackId })).toMatchObject({
      status: 'deployed',
      deployed_revision: 1,
    });
    // Drift checks touch the stack meanwhile: the same stacks, in the same order, with what HTTP says.
    const listed = await mcp.ok<{ stacks: { id: string }[] }>('list_stacks', { limit: 10 });
    const http = (await api.get('/stacks?limit=10')).body as typeof listed;
    expect(listed.stacks.map((x) => x.id)).toEqual(http.stacks.map((x) => x.id));
    expect(listed.stacks).toEqual([expect.objectContaining({ id: stackId, name: 'mcp-web', revision: 1 })]);
  });

  it('update_stack writes a revision that deploy_stack then applies', async () => {
    const updated = await mcp.ok('update_stack', { id: stackId, definition: source.v2 });
    expect(updated).toMatchObject({ revision: 2, deployed_revision: 1 });
    expect((await api.get(`/stacks/${stackId}`)).body).toMatchObject({ revision: 2, deployed_revision: 1 });
    const revisions = await mcp.ok('list_stack_revisions', { id: stackId });
    expect(revisions).toEqual((await api.get(`/stacks/${stackId}/revisions`)).body);
    await jobUntil((await mcp.ok<JobBody>('deploy_stack', { id: stackId })).id, ['succeeded']);
    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '2' });
  });

  it('list_jobs, get_job and get_job_logs answer what HTTP answers', async () => {
    const list = await mcp.ok<{ jobs: JobBody[] }>('list_jobs', { stack_id: stackId, status: 'succeeded' });
    expect(list).toEqual((await api.get(`/jobs?stack_id=${stackId}&status=succeeded`)).body);
    expect(list.jobs).toHaveLength(2);
    expect(await mcp.ok('get_job', { id: firstJobId })).toEqual((await api.get(`/jobs/${firstJobId}`)).body);
    const logs = await mcp.ok<{ lines: { line: string }[] }>('get_job_logs', { id: firstJobId });
    expect(logs).toEqual((await api.get(`/jobs/${firstJobId}/logs`)).body);
    expect(logs.lines.some((l) => l.line.includes('web: starting'))).toBe(true);
    const first = await mcp.ok<{ next_after: number }>('get_job_logs', { id: firstJobId, limit: 1 });
    const second = await mcp.ok('get_job_logs', { id: firstJobId, after: first.next_after, limit: 1 });
    expect(second).toEqual(
      (await api.get(`/jobs/${firstJobId}/logs?after=${first.next_after}&limit=1`)).body,
    );
  });

  it('drift: get, ignore and unignore, resolve brings the killed service back', async () => {
    const drift = () => mcp.ok<Drift>('get_stack_drift', { id: stackId });
    // In sync first: a check between update_stack and its deploy saw revision 2 against revision 1.
    await eventually(async () => (await drift()).status === 'in_sync');
    process.kill(servicePid(agent.dataDir, stackId, 'web'), 'SIGKILL');
    let drifted: Drift | undefined;
    await eventually(async () => {
      drifted = await drift();
      return drifted.status === 'drifted';
    });
    expect(drifted!.items).toEqual([
      expect.objectContaining({ resource: 'web', kind: 'missing', desired: 'running', ignored: false }),
    ]);
    const http = (await api.get(`/stacks/${stackId}/drift`)).body as Drift;
    expect(http).toMatchObject({
      status: 'drifted',
      revision: 2,
      items: [{ detected_at: drifted!.items[0].detected_at }],
    });

    const ignored = await mcp.ok('ignore_stack_drift', { id: stackId, resources: ['web'] });
    expect(ignored).toMatchObject({ status: 'in_sync', ignored_resources: ['web'] });
    expect((await api.get(`/stacks/${stackId}/drift`)).body.ignored_resources).toEqual(['web']);
    expect(await mcp.refused('resolve_stack_drift', { id: stackId })).toMatchObject({ status: 409 });
    const unknown = await mcp.refused('ignore_stack_drift', { id: stackId, resources: ['nope'] });
    expect(unknown).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(unknown.errors).toEqual([
      expect.objectContaining({ path: 'resources.0', category: 'invalid_value' }),
    ]);

    const unignored = await mcp.ok('unignore_stack_drift', { id: stackId, resources: ['web'] });
    expect(unignored).toMatchObject({ status: 'drifted', ignored_resources: [] });
    const resolve = await mcp.ok<{ job_id: string; job: JobBody }>('resolve_stack_drift', { id: stackId });
    // The stack is placed on a live worker: the job is on its way already.
    expect(resolve.job).toMatchObject({ id: resolve.job_id, type: 'provision', status: 'dispatched' });
    expect(await jobUntil(resolve.job_id, ['succeeded', 'failed'])).toMatchObject({ status: 'succeeded' });
    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '2' });
    await eventually(async () => (await api.get(`/stacks/${stackId}/drift`)).body.status === 'in_sync');
  });

  it('cancel_job: cancelled for a queued job, cancelling for a running one; cleanup_job ends a stuck one', async () => {
    const nowhere = (
      await api.yaml('post', '/stacks', webStackYaml('mcp-nowhere', await freePort(), { zone: 'nowhere' }))
    ).body.id as string;
    const queued = await mcp.ok<JobBody>('deploy_stack', { id: nowhere });
    await eventually(async () =>
      String((await mcp.ok<JobBody>('get_job', { id: queued.id })).error).includes('zone=nowhere'),
    );
    expect(await mcp.ok('cancel_job', { id: queued.id })).toMatchObject({
      id: queued.id,
      status: 'cancelled',
    });
    expect((await api.get(`/jobs/${queued.id}`)).body.status).toBe('cancelled');
    expect(await mcp.refused('cancel_job', { id: queued.id })).toMatchObject({
      status: 409,
      code: 'conflict',
    });
    const cleaned = await mcp.ok('cleanup_job', { id: queued.id });
    expect(cleaned).toMatchObject({ job: { id: queued.id, status: 'cancelled' }, worker_notified: false });
    expect(await mcp.refused('cleanup_job', { id: firstJobId })).toMatchObject({ status: 409 });

    // A service that never passes its health check keeps its provision job running.
    const stuckPort = await freePort();
    const stuck = (
      await api.yaml('post', '/stacks', webStackYaml('mcp-stuck', stuckPort, { failHealth: true }))
    ).body.id as string;
    const running = await mcp.ok<JobBody>('deploy_stack', { id: stuck });
    await jobUntil(running.id, ['running']);
    expect(await mcp.ok('cancel_job', { id: running.id })).toMatchObject({
      id: running.id,
      status: 'cancelling',
    });
    expect(await jobUntil(running.id, ['cancelled', 'failed', 'succeeded'])).toMatchObject({
      status: 'cancelled',
    });

    const again = await mcp.ok<JobBody>('deploy_stack', { id: stuck });
    await jobUntil(again.id, ['running']);
    const cleanup = await mcp.ok('cleanup_job', { id: again.id });
    expect(cleanup).toMatchObject({ job: { id: again.id, status: 'failed' }, worker_notified: true });
    expect((await api.get(`/jobs/${again.id}`)).body).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('cleaned_up'),
    });

    for (const id of [nowhere, stuck])
      await jobUntil((await mcp.ok<JobBody>('destroy_stack', { id })).id, ['succeeded']);
    expect((await api.get(`/stacks/${nowhere}`)).status).toBe(404);
    expect((await api.get(`/stacks/${stuck}`)).status).toBe(404);
  });

  it('malformed arguments are 422 tool errors; an invalid definition is the problem HTTP answers', async () => {
    for (const [name, args, path] of [
      ['get_job_logs', { id: firstJobId, limit: 0 }, 'limit'],
      ['get_job_logs', { id: firstJobId, after: -1 }, 'after'],
      ['list_jobs', { stack_id: 'nope' }, 'stack_id'],
      ['list_jobs', { status: 'done' }, 'status'],
      ['list_stacks', { limit: 201 }, 'limit'],
      ['ignore_stack_drift', { id: stackId, resources: [] }, 'resources'],
      ['ignore_stack_drift', { id: stackId, resources: ['Not A Label'] }, 'resources.0'],
      ['create_stack', { definition: 42 }, 'definition'],
      ['create_stack', {}, 'definition'],
    ] as const) {
      const problem = await mcp.refused(name, args);
      expect(problem, name).toMatchObject({ status: 422, code: 'validation_failed' });
      expect(
        problem.errors?.map((e) => e.path),
        name,
      ).toEqual([path]);
    }
    expect(await mcp.refused('get_stack', { id: 'not-a-uuid' })).toMatchObject({ status: 404 });

    for (const bad of ['name: [unclosed\n', 'name: x\nstackkit: basement-kit\nservices:\n  web: {}\n']) {
      const problem = await mcp.refused('create_stack', { definition: bad });
      const http = await api.yaml('post', '/stacks', bad);
      expect(problem.status).toBe(http.status);
      expect(problem).toEqual({
        status: http.body.status,
        code: http.body.code,
        title: http.body.title,
        detail: http.body.detail,
        errors: http.body.errors,
        ...(http.body.warnings ? { warnings: http.body.warnings } : {}),
      });
    }
  });

  it('destroy_stack: the job succeeds, the service is gone and so is the stack', async () => {
    const job = await mcp.ok<JobBody>('destroy_stack', { id: stackId });
    expect(job).toMatchObject({ type: 'destroy', stack_id: stackId });
    await jobUntil(job.id, ['succeeded']);
    expect(await httpGet(port, '/version')).toBe('ECONNREFUSED');
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
    expect((await mcp.listResources()).resources.map((r) => r.uri)).not.toContain(
      `stack://${stackId}/definition`,
    );
  });
});
