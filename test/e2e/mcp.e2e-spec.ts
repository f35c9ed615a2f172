import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { connectMcp, problemOf } from '../support/mcp-client.js';

// MCP over Streamable HTTP with the SDK's own client, against the real app.
const TUNNEL_TOOLS = [
  'get_topology',
  'get_tunnel_registry_url',
  'get_tunnel_status',
  'list_tunnel_subdomain_services',
  'list_tunnel_subdomains',
  'start_tunnel',
  'stop_tunnel',
  'validate_tunnel_url',
];

describe('MCP at /mcp (stateless Streamable HTTP)', () => {
  let t: TestApp;
  const clients: Client[] = [];
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await t.close();
  });

  async function connect(token: string): Promise<Client> {
    const client = await connectMcp(t.url, token);
    clients.push(client);
    return client;
  }

  it('lists the document eight tunnel tools, with annotations, to a token that may use them', async () => {
    const client = await connect((await t.token()).access_token);
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name).sort();
    expect(names).toEqual(expect.arrayContaining(TUNNEL_TOOLS));
    const status = tools.find((tool) => tool.name === 'get_tunnel_status');
    expect(status?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(tools.find((tool) => tool.name === 'stop_tunnel')?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
    });
  });

  it('a tool answers what the HTTP route answers, as structured content and as text', async () => {
    const client = await connect((await t.token()).access_token);
    const result = await client.callTool({ name: 'get_tunnel_status', arguments: {} });
    const http = await t.http
      .get('/api/v1/tunnel/status')
      .set('Authorization', await t.adminAuth())
      .expect(200);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual(http.body);
    expect(JSON.parse((result.content as { text: string }[])[0].text)).toEqual(http.body);
    const registry = await client.callTool({ name: 'get_tunnel_registry_url', arguments: {} });
    expect(registry.structuredContent).toEqual({ url: 'http://127.0.0.1', source: 'config' });
  });

  it('a read-only token does not see the write tools, and calling one anyway is an error', async () => {
    const readOnly = await connect((await t.token(undefined, 'tunnel:read')).access_token);
    const names = (await readOnly.listTools()).tools.map((tool) => tool.name);
    expect(names).toContain('get_tunnel_status');
    expect(names).not.toContain('start_tunnel');
    expect(names).not.toContain('validate_tunnel_url');
    const refused = await readOnly.callTool({ name: 'start_tunnel', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(problemOf(refused)).toMatchObject({ status: 403, code: 'forbidden' });
    expect(problemOf(refused).detail).toContain('tunnel:write');
    const status = await t.http.get('/api/v1/tunnel/status').set('Authorization', await t.adminAuth());
    expect(status.body.state).toBe('stopped');
  });

  it('a coded error is a tool error with the problem code; bad arguments are a tool error too', async () => {
    const client = await connect((await t.token()).access_token);
    const missing = await client.callTool({
      name: 'list_tunnel_subdomain_services',
      arguments: { base_id: 'nope' },
    });
    expect(missing.isError).toBe(true);
    expect(JSON.parse((missing.content as { text: string }[])[0].text)).toMatchObject({
      status: 404,
      code: 'not_found',
    });
    const bad = await client.callTool({ name: 'list_tunnel_subdomain_services', arguments: { base_id: 42 } });
    expect(bad.isError).toBe(true);
    expect(problemOf(bad)).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(problemOf(bad).errors).toEqual([{ path: 'base_id', message: expect.any(String) }]);
    // Arguments a tool does not take are refused, as an HTTP body with unknown fields is.
    const extra = await client.callTool({ name: 'get_tunnel_status', arguments: { verbose: true } });
    expect(problemOf(extra).errors).toEqual([
      { path: '(arguments)', message: expect.stringContaining('verbose') },
    ]);
    const unknown = await client.callTool({ name: 'no_such_tool', arguments: {} });
    expect(problemOf(unknown)).toMatchObject({ status: 404, code: 'not_found' });
    // The tunnel has no configuration here: start is refused in words, as over HTTP (409).
    const start = await client.callTool({ name: 'start_tunnel', arguments: {} });
    expect(start.isError).toBe(true);
    expect(problemOf(start)).toMatchObject({ status: 409 });
  });

  it('needs a token: 401 without one; GET and DELETE are 405 on this stateless endpoint', async () => {
    const res = await t.http
      .post('/mcp')
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(res.status).toBe(401);
    // MCP's authorization: the 401 names the protected-resource metadata (RFC 9728), which names the
    // authorization server, whose metadata (RFC 8414) names the token endpoint.
    const hint = /resource_metadata="([^"]+)"/.exec(res.headers['www-authenticate'] ?? '');
    expect(hint?.[1]).toBe('http://127.0.0.1/.well-known/oauth-protected-resource');
    const resource = await t.http.get('/.well-known/oauth-protected-resource').expect(200);
    expect(resource.body).toMatchObject({
      resource: 'http://127.0.0.1',
      authorization_servers: ['http://127.0.0.1'],
      bearer_methods_supported: ['header'],
    });
    expect(resource.body.scopes_supported).toEqual(expect.arrayContaining(['tunnel:read', 'tunnel:write']));
    const server = await t.http.get('/.well-known/oauth-authorization-server').expect(200);
    expect(server.body).toMatchObject({
      issuer: 'http://127.0.0.1',
      token_endpoint: 'http://127.0.0.1/oauth/token',
      grant_types_supported: ['client_credentials', 'refresh_token'],
    });
    const auth = await t.adminAuth();
    const get = await t.http.get('/mcp').set('Authorization', auth);
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect((await t.http.delete('/mcp').set('Authorization', auth)).status).toBe(405);
  });
});
