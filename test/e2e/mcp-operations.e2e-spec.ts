import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { connectMcp, problemOf, valueOf, type ToolProblem } from '../support/mcp-client.js';
import { connectedAgent } from '../support/stacks.js';

// The operations tools (health, info, workers, definitions, settings) over MCP with the SDK's own
// client, every effect checked through the HTTP API.
const WRITE_TOOLS = ['approve_worker', 'delete_worker', 'check_worker_connectivity', 'set_log_level'];
const READ_TOOLS = [
  'get_orchestrator_health',
  'get_orchestrator_info',
  'list_workers',
  'get_worker',
  'get_worker_connectivity',
  'validate_stack_definition',
  'get_settings',
];
const WORKERS = '/api/v1/orchestrator/workers';

const VALID = `name: shop
stackkit: basement-kit
services:
  web:
    image: nginx:1.27
    ports: ["8080:80"]
    depends_on: [api]
  api:
    command: [/usr/local/bin/api]
    flavour: spicy
`;

describe('MCP operations tools', () => {
  let t: TestApp;
  const clients: Client[] = [];
  const agents: AgentProcess[] = [];
  let admin: Client;
  let readOnly: Client;
  let other: Client;
  let otherAuth: string;
  let pendingId = '';

  beforeAll(async () => {
    // Thresholds at 100 %: a busy machine must not make the approved worker degraded.
    t = await startTestApp({
      env: { HEARTBEAT_INTERVAL: '400ms', WORKER_DEGRADED_PERCENT: '100', WORKER_UNHEALTHY_PERCENT: '100' },
    });
    admin = await connect((await t.token()).access_token);
    readOnly = await connect((await t.token(undefined, 'orchestrator:read')).access_token);
    // An admin of a second owner: it must not see or touch the first owner's workers.
    const created = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name: 'acme admin', owner: 'acme', scopes: ['admin'] })
      .expect(201);
    const acme = { clientId: created.body.client_id as string, secret: created.body.client_secret as string };
    const token = (await t.token(acme)).access_token;
    otherAuth = `Bearer ${token}`;
    other = await connect(token);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(agents.map((a) => a.stop('SIGKILL')));
    await t.close();
  });

  async function connect(token: string): Promise<Client> {
    const client = await connectMcp(t.url, token);
    clients.push(client);
    return client;
  }

  async function get(path: string, auth?: string) {
    return t.http.get(path).set('Authorization', auth ?? (await t.adminAuth()));
  }
  const workerStatus = async (id: string): Promise<string> =>
    (await get(`${WORKERS}/${id}`)).body.status as string;

  it('lists the tools per scope, with annotations true to what they do', async () => {
    const { tools } = await admin.listTools();
    const names = tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining([...READ_TOOLS, ...WRITE_TOOLS]));
    const hints = (name: string) => tools.find((tool) => tool.name === name)?.annotations;
    for (const name of READ_TOOLS) expect(hints(name), name).toMatchObject({ readOnlyHint: true });
    expect(hints('approve_worker')).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    expect(hints('delete_worker')).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(hints('check_worker_connectivity')).toMatchObject({ openWorldHint: true, idempotentHint: false });
    // The status filter's values are in the input schema a model reads.
    const list = tools.find((tool) => tool.name === 'list_workers');
    expect(list?.inputSchema.properties?.status).toMatchObject({ enum: expect.arrayContaining(['pending']) });

    const readNames = (await readOnly.listTools()).tools.map((tool) => tool.name);
    expect(readNames).toEqual(expect.arrayContaining(READ_TOOLS));
    for (const name of WRITE_TOOLS) expect(readNames).not.toContain(name);
    // Health is public over HTTP: any token that opens /mcp may read it, info needs orchestrator:read.
    const tunnelOnly = await connect((await t.token(undefined, 'tunnel:read')).access_token);
    const tunnelNames = (await tunnelOnly.listTools()).tools.map((tool) => tool.name);
    expect(tunnelNames).toContain('get_orchestrator_health');
    expect(tunnelNames).not.toContain('get_orchestrator_info');
  });

  it('health and info answer what the HTTP routes answer', async () => {
    const health = valueOf(await admin.callTool({ name: 'get_orchestrator_health', arguments: {} }));
    const httpHealth = await t.http.get('/api/v1/orchestrator/health');
    expect(health).toEqual({ ...httpHealth.body, uptime: expect.stringMatching(/^\d+h\d+m\d+s$/) });
    const info = valueOf(await readOnly.callTool({ name: 'get_orchestrator_info', arguments: {} }));
    const httpInfo = await get('/api/v1/orchestrator/info');
    expect(info).toEqual({ ...httpInfo.body, uptime: expect.any(String) });
    expect(info.agent_endpoint).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('a pending worker approved through MCP starts reporting; refused to a read-only token and to another owner', async () => {
    const token = await t.http
      .post('/api/v1/orchestrator/join-tokens')
      .set('Authorization', await t.adminAuth())
      .send({})
      .expect(201);
    agents.push(AgentProcess.start({ server: t.url, token: token.body.token as string, name: 'mcp-node' }));
    await eventually(async () => {
      const listed = await admin.callTool({ name: 'list_workers', arguments: { status: 'pending' } });
      const workers = valueOf(listed).workers as { id: string; name: string; status: string }[];
      expect(workers.every((w) => w.status === 'pending')).toBe(true);
      pendingId = workers.find((w) => w.name === 'mcp-node')?.id ?? '';
      return pendingId !== '';
    }, 20_000);
    expect(await workerStatus(pendingId)).toBe('pending');

    const refused = await readOnly.callTool({ name: 'approve_worker', arguments: { id: pendingId } });
    expect(problemOf(refused)).toMatchObject({ status: 403, code: 'forbidden' });
    expect(problemOf(refused).detail).toContain('workers:admin');
    // Another owner sees no such worker, as over HTTP (404, not 403).
    const theirs = valueOf(await other.callTool({ name: 'list_workers', arguments: {} }));
    expect(theirs).toEqual({ workers: [], next_cursor: null });
    for (const name of ['get_worker', 'approve_worker']) {
      const hidden = await other.callTool({ name, arguments: { id: pendingId } });
      expect(problemOf(hidden), name).toMatchObject({ status: 404, code: 'not_found' });
    }
    expect((await get(`${WORKERS}/${pendingId}`, otherAuth)).status).toBe(404);
    expect(await workerStatus(pendingId)).toBe('pending');

    const approved = valueOf(await admin.callTool({ name: 'approve_worker', arguments: { id: pendingId } }));
    expect(approved).toMatchObject({ id: pendingId, name: 'mcp-node', approved_at: expect.any(String) });
    // Reporting: healthy, or degraded while a loaded machine's CPU reads above the threshold.
    await eventually(async () => ['healthy', 'degraded'].includes(await workerStatus(pendingId)), 20_000);
    expect((await get(`${WORKERS}/${pendingId}`)).body.connected).toBe(true);
    // A second approval changes nothing: a conflict, as over HTTP.
    const again = await admin.callTool({ name: 'approve_worker', arguments: { id: pendingId } });
    expect(problemOf(again)).toMatchObject({ status: 409, code: 'conflict' });

    const one = valueOf(await readOnly.callTool({ name: 'get_worker', arguments: { id: pendingId } }));
    const http = (await get(`${WORKERS}/${pendingId}`)).body as Record<string, unknown>;
    expect(one).toEqual({ ...http, last_heartbeat: expect.any(String), metrics: expect.any(Object) });
    // The status filter reads the stored state, which follows heartbeats within a flush.
    await eventually(async () => {
      for (const status of ['healthy', 'degraded']) {
        const listed = await admin.callTool({ name: 'list_workers', arguments: { status } });
        if ((valueOf(listed).workers as { id: string }[]).some((w) => w.id === pendingId)) return true;
      }
      return false;
    });
    const pending = valueOf(await admin.callTool({ name: 'list_workers', arguments: { status: 'pending' } }));
    expect((pending.workers as { id: string }[]).map((w) => w.id)).not.toContain(pendingId);
  });

  it('a connectivity check through MCP makes the agents probe each other; the matrix is the HTTP one', async () => {
    expect(pendingId).not.toBe('');
    const peer = await connectedAgent(t, 'mcp-peer');
    agents.push(peer.agent);
    const check = valueOf(await admin.callTool({ name: 'check_worker_connectivity', arguments: {} }));
    expect(check).toMatchObject({ probe_id: expect.any(String), workers: 2 });
    // The other owner's round asks nobody: its owner has no agents.
    const theirs = valueOf(await other.callTool({ name: 'check_worker_connectivity', arguments: {} }));
    expect(theirs.workers).toBe(0);
    let matrix: { links: { from: string; to: string; reachable: boolean }[] } = { links: [] };
    await eventually(async () => {
      const result = await readOnly.callTool({ name: 'get_worker_connectivity', arguments: {} });
      matrix = valueOf(result) as typeof matrix;
      const reachable = (from: string, to: string) =>
        matrix.links.some((l) => l.from === from && l.to === to && l.reachable);
      return reachable(pendingId, peer.workerId) && reachable(peer.workerId, pendingId);
    }, 20_000);
    expect(matrix).toEqual((await get(`${WORKERS}/connectivity`)).body);
    const refused = await readOnly.callTool({ name: 'check_worker_connectivity', arguments: {} });
    expect(problemOf(refused)).toMatchObject({ status: 403 });
  });

  it('delete_worker removes the worker: HTTP answers 404 after; never for another owner', async () => {
    expect(pendingId).not.toBe('');
    const hidden = await other.callTool({ name: 'delete_worker', arguments: { id: pendingId } });
    expect(problemOf(hidden)).toMatchObject({ status: 404 });
    expect((await get(`${WORKERS}/${pendingId}`)).status).toBe(200);
    const deleted = valueOf(await admin.callTool({ name: 'delete_worker', arguments: { id: pendingId } }));
    expect(deleted).toEqual({ id: pendingId, deleted: true });
    expect((await get(`${WORKERS}/${pendingId}`)).status).toBe(404);
    const again = await admin.callTool({ name: 'delete_worker', arguments: { id: pendingId } });
    expect(problemOf(again)).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('validate_stack_definition answers what unifier/validate answers, valid or not', async () => {
    const validate = async (definition: string) => {
      const http = await t.http
        .post('/api/v1/orchestrator/unifier/validate')
        .set('Authorization', await t.adminAuth())
        .set('Content-Type', 'application/yaml')
        .send(definition);
      const mcp = await readOnly.callTool({ name: 'validate_stack_definition', arguments: { definition } });
      return { http, mcp };
    };
    const ok = await validate(VALID);
    expect(ok.http.status).toBe(200);
    expect(valueOf(ok.mcp)).toEqual(ok.http.body);
    expect((ok.http.body.warnings as unknown[]).length).toBeGreaterThan(0);
    for (const [source, status, code] of [
      ['name: shop\nservices: [unclosed\n', 400, 'invalid_yaml'],
      ['name: shop\nstackkit: no-such-kit\nservices:\n  Bad_Name:\n    image: x\n', 422, 'validation_failed'],
      ['   \n', 400, 'invalid_yaml'],
    ] as const) {
      const { http, mcp } = await validate(source);
      expect(http.status, source).toBe(status);
      const {
        status: s,
        code: c,
        detail,
        errors,
        warnings,
      } = http.body as ToolProblem & { warnings?: unknown[] };
      expect(problemOf(mcp), source).toEqual({
        status: s,
        code: c,
        title: expect.any(String),
        detail,
        errors,
        ...(warnings ? { warnings } : {}),
      });
      expect(c).toBe(code);
    }
    // Past the HTTP body limit the request itself is refused (413), as the YAML body would be.
    const huge = `name: big\n# ${'x'.repeat(1024 * 1024)}\n`;
    await expect(
      readOnly.callTool({ name: 'validate_stack_definition', arguments: { definition: huge } }),
    ).rejects.toMatchObject({ code: 413 });
  });

  it('set_log_level changes the setting HTTP shows; only for an operator admin', async () => {
    const set = valueOf(await admin.callTool({ name: 'set_log_level', arguments: { log_level: 'debug' } }));
    expect(set).toMatchObject({ log_level: 'debug', updated_at: expect.any(String) });
    const http = await get('/api/v1/orchestrator/settings');
    expect(http.body).toEqual(set);
    expect(valueOf(await readOnly.callTool({ name: 'get_settings', arguments: {} }))).toEqual(http.body);

    const refused = await readOnly.callTool({ name: 'set_log_level', arguments: { log_level: 'trace' } });
    expect(problemOf(refused)).toMatchObject({ status: 403, code: 'forbidden' });
    // Another owner's admin holds the scope but not the instance: 403, as over HTTP.
    const theirs = await other.callTool({ name: 'set_log_level', arguments: { log_level: 'trace' } });
    const httpTheirs = await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', otherAuth)
      .send({ log_level: 'trace' });
    expect(httpTheirs.status).toBe(403);
    expect(problemOf(theirs)).toMatchObject({ status: 403, code: httpTheirs.body.code });
    expect((await get('/api/v1/orchestrator/settings')).body.log_level).toBe('debug');
    valueOf(await admin.callTool({ name: 'set_log_level', arguments: { log_level: 'info' } }));
  });

  it('malformed arguments are 422 tool errors with the field errors HTTP gives', async () => {
    const badStatus = await admin.callTool({ name: 'list_workers', arguments: { status: 'sleepy' } });
    const httpStatus = await get(`${WORKERS}?status=sleepy`);
    expect(httpStatus.status).toBe(422);
    expect(problemOf(badStatus)).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(problemOf(badStatus).errors).toEqual(httpStatus.body.errors);

    const badLevel = await admin.callTool({ name: 'set_log_level', arguments: { log_level: 'loud' } });
    const httpLevel = await t.http
      .patch('/api/v1/orchestrator/settings')
      .set('Authorization', await t.adminAuth())
      .send({ log_level: 'loud' });
    expect(httpLevel.status).toBe(422);
    expect(problemOf(badLevel).errors).toEqual(httpLevel.body.errors);

    const extra = await admin.callTool({ name: 'get_worker', arguments: { id: pendingId, verbose: true } });
    expect(problemOf(extra)).toMatchObject({ status: 422 });
    expect(problemOf(extra).errors).toEqual([
      { path: '(arguments)', message: expect.stringContaining('verbose') },
    ]);
    const badLimit = await admin.callTool({ name: 'list_workers', arguments: { limit: 201 } });
    expect(problemOf(badLimit).errors).toEqual([{ path: 'limit', message: expect.any(String) }]);
    const missing = await admin.callTool({ name: 'get_worker', arguments: {} });
    expect(problemOf(missing).errors).toEqual([{ path: 'id', message: expect.any(String) }]);
  });
});
