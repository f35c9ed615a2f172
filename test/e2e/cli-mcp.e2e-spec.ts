import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import {
  createClient,
  httpMcp,
  mcpEnv,
  outcome,
  stdioMcp,
  toolProblem,
  type Credentials,
  type StdioMcp,
} from '../support/mcp-clients.js';
import { requireBuilt, stackctl, startStackctl } from '../support/stackctl.js';

// `stackctl mcp`, the stdio MCP server for desktop clients, run as the built program with the SDK's
// own stdio client, against the real service; what it answers is compared with what the service's
// /mcp answers the same client over Streamable HTTP.

const WRITE_TOOLS = ['start_tunnel', 'stop_tunnel', 'validate_tunnel_url'];

describe('stackctl mcp, a stdio MCP server forwarding to the service', () => {
  let t: TestApp;
  let readOnly: Credentials;
  const open: StdioMcp[] = [];
  const https: Client[] = [];

  beforeAll(async () => {
    requireBuilt();
    t = await startTestApp();
    readOnly = await createClient(t.url, await t.adminAuth(), 'mcp read-only', ['tunnel:read']);
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
    await Promise.all(https.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await t.close();
  });

  async function stdio(client: Credentials = ADMIN): Promise<StdioMcp> {
    const started = await stdioMcp(t.url, client);
    open.push(started);
    return started;
  }
  async function http(client: Credentials = ADMIN): Promise<Client> {
    const connected = await httpMcp(t.url, (await t.token(client)).access_token);
    https.push(connected);
    return connected;
  }

  it('initializes as the service does and lists what /mcp lists the same client', async () => {
    const { client } = await stdio();
    const direct = await http();
    expect(client.getServerVersion()).toEqual(direct.getServerVersion());
    const [capabilities, upstream] = [client.getServerCapabilities(), direct.getServerCapabilities()];
    for (const kind of ['tools', 'resources', 'prompts', 'completions'] as const)
      expect(Boolean(capabilities?.[kind]), kind).toBe(Boolean(upstream?.[kind]));

    const tools = await client.listTools();
    expect(tools).toEqual(await direct.listTools());
    expect(tools.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(WRITE_TOOLS));
    // Resources and prompts: the same answers, or the same protocol error while the service has none.
    expect(await outcome(client.listResources())).toEqual(await outcome(direct.listResources()));
    expect(await outcome(client.listResourceTemplates())).toEqual(
      await outcome(direct.listResourceTemplates()),
    );
    expect(await outcome(client.listPrompts())).toEqual(await outcome(direct.listPrompts()));
  });

  it('a read tool answers what the HTTP route answers; tool errors pass through as they are', async () => {
    const { client } = await stdio();
    const direct = await http();
    const status = await client.callTool({ name: 'get_tunnel_status', arguments: {} });
    const route = await t.http.get('/api/v1/tunnel/status').set('Authorization', await t.adminAuth());
    expect(route.status).toBe(200);
    expect(status.isError).toBeFalsy();
    expect(status.structuredContent).toEqual(route.body);
    expect(status).toEqual(await direct.callTool({ name: 'get_tunnel_status', arguments: {} }));

    const missing = { name: 'list_tunnel_subdomain_services', arguments: { base_id: 'nope' } };
    const notFound = await client.callTool(missing);
    expect(toolProblem(notFound)).toMatchObject({ status: 404, code: 'not_found' });
    expect(notFound).toEqual(await direct.callTool(missing));
    const bad = { name: 'list_tunnel_subdomain_services', arguments: { base_id: 42 } };
    const invalid = await client.callTool(bad);
    expect(toolProblem(invalid)).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(invalid).toEqual(await direct.callTool(bad));
  });

  it('protocol errors keep their code and message', async () => {
    const { client } = await stdio();
    const direct = await http();
    const read = { uri: 'stack://00000000-0000-0000-0000-000000000000/definition' };
    expect(await outcome(client.readResource(read))).toEqual(await outcome(direct.readResource(read)));
    // No such prompt: "method not found" while the service has no prompts, "invalid params" after.
    const prompt = { name: 'no_such_prompt' };
    const viaStdio = await outcome(client.getPrompt(prompt));
    expect(viaStdio).toMatchObject({ error: { code: expect.any(Number), message: expect.any(String) } });
    expect(viaStdio).toEqual(await outcome(direct.getPrompt(prompt)));
  });

  it('a read-only client sees no write tool, and calling one anyway is a 403 tool error', async () => {
    const { client } = await stdio(readOnly);
    const tools = await client.listTools();
    expect(tools).toEqual(await (await http(readOnly)).listTools());
    const names = tools.tools.map((tool) => tool.name);
    expect(names).toContain('get_tunnel_status');
    for (const write of WRITE_TOOLS) expect(names).not.toContain(write);
    const refused = await client.callTool({ name: 'start_tunnel', arguments: {} });
    expect(toolProblem(refused)).toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('answers the requests written before its input ends, JSON-RPC only on stdout, and exits 0', async () => {
    const requests = [
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'pipe', version: '1' },
        },
      },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_tunnel_status', arguments: {} } },
    ];
    const run = await stackctl(['mcp'], mcpEnv(t.url, ADMIN), {
      input: requests.map((r) => `${JSON.stringify(r)}\n`).join(''),
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const answers = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { jsonrpc: string; id: number; result?: Record<string, unknown> });
    expect(answers.map((a) => [a.jsonrpc, a.id])).toEqual([
      ['2.0', 1],
      ['2.0', 2],
    ]);
    expect(answers[0].result).toMatchObject({ protocolVersion: '2025-06-18', capabilities: { tools: {} } });
    expect(answers[1].result?.structuredContent).toMatchObject({ state: 'stopped' });
  });

  it('wrong credentials: the token endpoint error on stderr, nothing on stdout, exit 1', async () => {
    const wrong = 'wrong-secret-0123456789';
    const started = startStackctl(['mcp'], mcpEnv(t.url, { clientId: ADMIN.clientId, secret: wrong }), {
      secrets: [wrong],
    });
    const run = await started.done;
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^stackctl: Client authentication failed\. \(invalid_client, request \S+\)\n$/,
    );

    // The same seen from a desktop client: initialize fails, it does not hang.
    await expect(stdioMcp(t.url, { clientId: ADMIN.clientId, secret: wrong })).rejects.toThrow(
      /Connection closed/,
    );
  });

  it('takes the secret from the environment only', async () => {
    const run = await stackctl(['mcp', '--client-secret', ADMIN.secret], {
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
    });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('"mcp" takes the client secret from STACKCTL_CLIENT_SECRET only');
    const none = await stackctl(['mcp'], { STACKCTL_SERVER: t.url, STACKCTL_CLIENT_ID: ADMIN.clientId });
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^stackctl: no client secret: set STACKCTL_CLIENT_SECRET\.\n/);
  });
});
