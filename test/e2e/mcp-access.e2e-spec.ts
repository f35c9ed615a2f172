import { ErrorCode, type McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { connectMcp, type McpClient } from '../support/mcp-client.js';
import { connectedAgent, freePort, orchestrator, type JobBody, webStackYaml } from '../support/stacks.js';

// The MCP resources and prompts, and who may use the stack and job tools and read them: owners and
// scopes. A stack deployed over HTTP at revision 1, with revision 2 written but not deployed.
const RESOURCE_NOT_FOUND = -32002;

describe('MCP resources, prompts, owners and scopes', () => {
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let mcp: McpClient;
  const clients: McpClient[] = [];
  let stackId: string;
  let jobId: string;
  const source = { v1: '', v2: '' };

  const connect = async (token: string) => {
    const client = await connectMcp(t.url, token);
    clients.push(client);
    return client;
  };
  const jobsOf = async (id: string) => (await api.get(`/jobs?stack_id=${id}`)).body.jobs as JobBody[];

  beforeAll(async () => {
    t = await startTestApp({
      env: { HEARTBEAT_INTERVAL: '300ms', WORKER_DEGRADED_PERCENT: '100', WORKER_UNHEALTHY_PERCENT: '100' },
    });
    api = orchestrator(t);
    ({ agent } = await connectedAgent(t, 'mcp-access-node'));
    const port = await freePort();
    source.v1 = webStackYaml('mcp-access', port);
    source.v2 = webStackYaml('mcp-access', port, { version: '2' });
    stackId = (await api.yaml('post', '/stacks', source.v1)).body.id as string;
    jobId = (await api.post(`/stacks/${stackId}/deploy`)).body.id as string;
    await api.jobUntil(jobId, ['succeeded']);
    await eventually(async () => (await api.get(`/stacks/${stackId}/health`)).body.overall === 'healthy');
    expect((await api.yaml('put', `/stacks/${stackId}`, source.v2)).status).toBe(200);
    // Revision 2 against revision 1 running: VERSION is modified, and stays so.
    await eventually(async () => (await api.get(`/stacks/${stackId}/drift`)).body.status === 'drifted');
    mcp = await connect((await t.token()).access_token);
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await agent?.stop();
    await t?.close();
  });

  it("resources: the caller's stack definitions and job logs, listed and read", async () => {
    const { resourceTemplates } = await mcp.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate).sort()).toEqual([
      'job://{id}/logs',
      'stack://{id}/definition',
    ]);
    const { resources } = await mcp.listResources();
    expect(resources).toEqual([
      expect.objectContaining({ uri: `stack://${stackId}/definition`, mimeType: 'application/yaml' }),
      expect.objectContaining({ uri: `job://${jobId}/logs`, mimeType: 'text/plain' }),
    ]);
    // The current revision (2, not deployed), as it was submitted.
    const definition = await mcp.readResource({ uri: `stack://${stackId}/definition` });
    expect(definition.contents).toEqual([
      { uri: `stack://${stackId}/definition`, mimeType: 'application/yaml', text: source.v2 },
    ]);
    expect((await api.get(`/stacks/${stackId}/revisions/2`)).body.source).toBe(source.v2);
    const logs = (await mcp.readResource({ uri: `job://${jobId}/logs` })).contents[0] as { text: string };
    const http = (await api.get(`/jobs/${jobId}/logs`)).body.lines as { time: string; line: string }[];
    expect(logs.text).toBe(http.map((l) => `${l.time} ${l.line}\n`).join(''));
    expect(logs.text).toContain('web: starting');
    await expect(
      mcp.readResource({ uri: 'stack://00000000-0000-4000-8000-000000000000/definition' }),
    ).rejects.toMatchObject({ code: RESOURCE_NOT_FOUND, data: { status: 404, code: 'not_found' } });
  });

  it('diagnose_stack embeds health, drift and the last job with its log tail', async () => {
    expect((await mcp.listPrompts()).prompts.map((p) => p.name).sort()).toEqual([
      'deploy_stack_checklist',
      'diagnose_stack',
    ]);
    const prompt = await mcp.getPrompt({ name: 'diagnose_stack', arguments: { stack_id: stackId } });
    expect(prompt.messages).toHaveLength(1);
    expect(prompt.messages[0].role).toBe('user');
    const text = (prompt.messages[0].content as { text: string }).text;
    const health = (await api.get(`/stacks/${stackId}/health`)).body as { overall: string };
    const drift = (await api.get(`/stacks/${stackId}/drift`)).body as { status: string };
    expect(text).toContain(`"stack_id": "${stackId}"`);
    expect(text).toContain(`"overall": "${health.overall}"`);
    expect(drift.status).toBe('drifted');
    expect(text).toContain(`"status": "drifted"`);
    expect(text).toContain(`"kind": "modified"`);
    expect(text).toContain(`"id": "${jobId}"`);
    const lines = (await api.get(`/jobs/${jobId}/logs`)).body.lines as { line: string }[];
    expect(text).toContain(lines.at(-1)!.line);
  });

  it('deploy_stack_checklist embeds the deployed and the current definition', async () => {
    const prompt = await mcp.getPrompt({ name: 'deploy_stack_checklist', arguments: { stack_id: stackId } });
    const text = (prompt.messages[0].content as { text: string }).text;
    expect(text).toContain(
      `## Current revision 2 (what a deploy applies)\n\`\`\`yaml\n${source.v2.trimEnd()}`,
    );
    expect(text).toContain(`## Deployed revision 1 (what runs now)\n\`\`\`yaml\n${source.v1.trimEnd()}`);
    await expect(
      mcp.getPrompt({ name: 'diagnose_stack', arguments: { stack_id: 'nope' } }),
    ).rejects.toMatchObject({ code: ErrorCode.InvalidParams, data: { status: 404 } });
  });

  it("another owner gets 404s and reads none of the caller's resources", async () => {
    const res = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name: 'acme admin', owner: 'acme', scopes: ['admin'] })
      .expect(201);
    const client = { clientId: res.body.client_id as string, secret: res.body.client_secret as string };
    const acme = await connect((await t.token(client)).access_token);
    const before = await jobsOf(stackId);
    for (const [name, args] of [
      ['get_stack', { id: stackId }],
      ['get_stack_health', { id: stackId }],
      ['list_stack_revisions', { id: stackId }],
      ['get_stack_drift', { id: stackId }],
      ['update_stack', { id: stackId, definition: source.v1 }],
      ['deploy_stack', { id: stackId }],
      ['destroy_stack', { id: stackId }],
      ['ignore_stack_drift', { id: stackId, resources: ['web'] }],
      ['resolve_stack_drift', { id: stackId }],
      ['get_job', { id: jobId }],
      ['get_job_logs', { id: jobId }],
      ['cancel_job', { id: jobId }],
      ['cleanup_job', { id: jobId }],
    ] as const)
      expect(await acme.refused(name, args), name).toMatchObject({ status: 404, code: 'not_found' });
    expect(await jobsOf(stackId)).toEqual(before);
    expect((await api.get(`/stacks/${stackId}`)).body).toMatchObject({ revision: 2, status: 'deployed' });
    expect(await acme.ok('list_stacks')).toEqual({ stacks: [], next_cursor: null });
    expect(await acme.ok('list_jobs')).toEqual({ jobs: [], next_cursor: null });
    expect((await acme.listResources()).resources).toEqual([]);
    for (const uri of [`stack://${stackId}/definition`, `job://${jobId}/logs`]) {
      const err = await acme.readResource({ uri }).then(
        () => undefined,
        (e: unknown) => e as McpError,
      );
      expect(err).toMatchObject({ code: RESOURCE_NOT_FOUND, data: { status: 404, code: 'not_found' } });
      // Nothing of theirs in the answer: neither the definition nor a log line.
      expect(JSON.stringify([err?.message, err?.data])).not.toMatch(/http-service|web:/);
    }
    await expect(
      acme.getPrompt({ name: 'diagnose_stack', arguments: { stack_id: stackId } }),
    ).rejects.toMatchObject({ code: ErrorCode.InvalidParams, data: { status: 404 } });
  });

  it('a read-only token: deploy_stack is refused (403) and no job is created', async () => {
    const readOnly = await connect((await t.token(undefined, 'orchestrator:read')).access_token);
    const before = await jobsOf(stackId);
    const refused = await readOnly.refused('deploy_stack', { id: stackId });
    expect(refused).toMatchObject({ status: 403, code: 'forbidden' });
    expect(refused.detail).toContain('orchestrator:write');
    expect(await jobsOf(stackId)).toEqual(before);
    expect(await readOnly.ok('get_stack', { id: stackId })).toMatchObject({ id: stackId });
    const definition = await readOnly.readResource({ uri: `stack://${stackId}/definition` });
    expect(definition.contents).toHaveLength(1);
    expect((await readOnly.listPrompts()).prompts).toHaveLength(2);
  });

  it('without orchestrator:read, resources and prompts are neither listed nor readable', async () => {
    const tunnelOnly = await connect((await t.token(undefined, 'tunnel:read')).access_token);
    expect((await tunnelOnly.listResources()).resources).toEqual([]);
    await expect(tunnelOnly.readResource({ uri: `stack://${stackId}/definition` })).rejects.toMatchObject({
      code: ErrorCode.InvalidParams,
      data: { status: 403, code: 'forbidden' },
    });
    expect((await tunnelOnly.listPrompts()).prompts).toEqual([]);
    await expect(
      tunnelOnly.getPrompt({ name: 'diagnose_stack', arguments: { stack_id: stackId } }),
    ).rejects.toMatchObject({ code: ErrorCode.InvalidParams });
  });
});
