import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../support/agent-process.js';
import { ADMIN, eventually, startTestApp, type TestApp } from '../support/app.js';
import { send } from '../support/ingress.js';
import { connectMcp, type McpClient } from '../support/mcp-client.js';
import { createClient } from '../support/mcp-clients.js';
import { relayTunnel, startRelay, type Relay, type RelayTunnel } from '../support/relay.js';
import { connectedAgent, freePort, orchestrator, shopYaml } from '../support/stacks.js';
import { TOPOLOGY_FIELDS } from '../support/tunnel-contract.js';

// The eight tunnel tools over MCP with the SDK's own client, each effect checked through the HTTP
// tunnel API: a real sshd on loopback is the relay, a real agent runs the published service.

const DOMAIN = 'tunnel.test';

/** A request through the relay's forwarded port: its answer, or null when nothing answers. */
async function through(url: string): Promise<unknown> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    return { status: res.status, body: await res.json() };
  } catch {
    return null;
  }
}

describe('MCP tunnel tools, every effect checked through the HTTP tunnel API', () => {
  let relay: Relay;
  let tunnel: RelayTunnel;
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess | undefined;
  let admin: McpClient;
  const clients: McpClient[] = [];

  /** GET /api/v1/tunnel<path> with the admin's token (or `auth`), which must answer 200. */
  const http = async (path: string, auth?: string): Promise<unknown> => {
    const res = await t.http.get(`/api/v1/tunnel${path}`).set('Authorization', auth ?? (await t.adminAuth()));
    expect(res.status, res.text).toBe(200);
    return res.body as unknown;
  };
  const audit = async (action: string) =>
    (await api.get(`/audit?action=${action}`)).body.events as { actor: string; details: object }[];
  const connect = async (token: string): Promise<McpClient> => {
    const client = await connectMcp(t.url, token);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    relay = await startRelay();
    tunnel = await relayTunnel(relay);
    t = await startTestApp({
      env: {
        ...tunnel.env,
        TUNNEL_BASE_DOMAIN: DOMAIN,
        TUNNEL_ALLOW_PRIVATE_URLS: 'true',
        // Thresholds at 100 %: a busy machine must not make the worker unfit for the deploy.
        HEARTBEAT_INTERVAL: '300ms',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
    api = orchestrator(t);
    admin = await connect((await t.token()).access_token);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await agent?.stop();
    await t?.close();
    await relay?.close();
  });

  it('start_tunnel: HTTP status is running with the public URL, and the relay port answers as this instance', async () => {
    expect(await http('/status')).toMatchObject({ state: 'stopped', public_url: null });
    const started = await admin.ok('start_tunnel');
    expect(started).toMatchObject({
      state: 'running',
      provider: 'ssh',
      public_url: tunnel.publicUrl,
      agent_endpoint: tunnel.agentEndpoint,
      last_error: null,
    });
    expect(await http('/status')).toEqual(started);
    const direct = await t.http.get('/.well-known/stack-orchestrator').expect(200);
    expect(await through(`${tunnel.publicUrl}/.well-known/stack-orchestrator`)).toEqual({
      status: 200,
      body: direct.body,
    });
    // The change is the caller's: audited once, with the MCP token's client as the actor.
    expect(await audit('tunnel.started')).toMatchObject([{ actor: ADMIN.clientId }]);

    expect(await admin.ok('get_tunnel_status')).toEqual(await http('/status'));
    const registry = await admin.ok('get_tunnel_registry_url');
    expect(registry).toEqual({ url: tunnel.publicUrl, source: 'tunnel' });
    expect(registry).toEqual(await http('/registry-url'));
  });

  it('get_topology answers what HTTP GET topology answers (no STUN server asked)', async () => {
    const topology = await admin.ok('get_topology');
    expect(Object.keys(topology).sort()).toEqual(TOPOLOGY_FIELDS);
    expect(topology).toMatchObject({ public_ip: null, has_nat: false });
    expect(topology.local_ips).toContain('127.0.0.1');
    expect(topology).toEqual(await http('/topology'));
  });

  it('list_tunnel_subdomains and list_tunnel_subdomain_services answer what HTTP answers; never to another owner', async () => {
    expect(await admin.ok('list_tunnel_subdomains')).toEqual({ subdomains: [] });
    ({ agent } = await connectedAgent(t, 'mcp-tunnel-node'));
    const port = await freePort();
    const created = await api.yaml('post', '/stacks', shopYaml(port, { isPublic: true, version: 'one' }));
    expect(created.status, created.text).toBe(201);
    const stackId = created.body.id as string;
    const deployed = async (job: { body: { id?: unknown } }) =>
      (await api.jobUntil(job.body.id as string, ['succeeded', 'failed'])).status;
    expect(await deployed(await api.post(`/stacks/${stackId}/deploy`))).toBe('succeeded');
    // The publication is the last thing a deploy writes.
    await eventually(async () => (await audit('tunnel.services_published')).length === 1);

    const list = await admin.ok<{ subdomains: { base_id: string }[] }>('list_tunnel_subdomains');
    expect(list).toEqual(await http('/subdomains'));
    expect(list.subdomains).toHaveLength(1);
    const baseId = list.subdomains[0].base_id;
    const host = `web-shop.${baseId}.${DOMAIN}`;
    const services = await admin.ok('list_tunnel_subdomain_services', { base_id: baseId });
    expect(services).toEqual({
      base_id: baseId,
      services: [{ name: 'web', subdomain: host, url: `http://${host}`, target: `127.0.0.1:${port}` }],
    });
    expect(services).toEqual(await http(`/subdomains/${baseId}/services`));
    // The published name answers through the relay while the tunnel runs.
    await eventually(async () => {
      const answer = await send(Number(new URL(tunnel.publicUrl).port), {
        path: '/version',
        headers: { host },
      });
      return answer.status === 200 && answer.body.toString('utf8') === 'one';
    });

    const acmeClient = await createClient(t.url, await t.adminAuth(), 'acme', ['tunnel:read'], 'acme');
    const acmeToken = (await t.token(acmeClient)).access_token;
    const acme = await connect(acmeToken);
    expect(await acme.ok('list_tunnel_subdomains')).toEqual({ subdomains: [] });
    expect(await http('/subdomains', `Bearer ${acmeToken}`)).toEqual({ subdomains: [] });
    expect(await acme.refused('list_tunnel_subdomain_services', { base_id: baseId })).toMatchObject({
      status: 404,
      code: 'not_found',
    });
    const foreign = await t.http
      .get(`/api/v1/tunnel/subdomains/${baseId}/services`)
      .set('Authorization', `Bearer ${acmeToken}`);
    expect(foreign.status).toBe(404);
    // The tunnel is the instance's: another owner's client may not change it, whatever its scopes.
    const writer = await createClient(t.url, await t.adminAuth(), 'acme-writer', ['tunnel:write'], 'acme');
    const acmeWriter = await connect((await t.token(writer)).access_token);
    for (const [tool, args] of [
      ['stop_tunnel', {}],
      ['start_tunnel', {}],
      ['validate_tunnel_url', { url: t.url, save: true }],
    ] as const)
      expect(await acmeWriter.refused(tool, args), tool).toMatchObject({ status: 403, code: 'forbidden' });
    expect(((await http('/status')) as { state: string }).state).toBe('running');

    // Destroyed (its detached process with it), the stack leaves its base with nothing published.
    expect(await deployed(await api.delete(`/stacks/${stackId}`))).toBe('succeeded');
    await eventually(async () => (await api.get(`/stacks/${stackId}`)).status === 404);
    const emptied = await admin.ok('list_tunnel_subdomain_services', { base_id: baseId });
    expect(emptied).toEqual({ base_id: baseId, services: [] });
    expect(emptied).toEqual(await http(`/subdomains/${baseId}/services`));
  });

  it('stop_tunnel: HTTP status is stopped and the relay port no longer answers', async () => {
    const stopped = await admin.ok('stop_tunnel');
    expect(stopped).toMatchObject({
      state: 'stopped',
      public_url: null,
      agent_endpoint: null,
      started_at: null,
    });
    expect(await http('/status')).toEqual(stopped);
    expect(await through(`${tunnel.publicUrl}/.well-known/stack-orchestrator`)).toBeNull();
    expect(await audit('tunnel.stopped')).toMatchObject([{ actor: ADMIN.clientId }]);
    expect(await admin.ok('get_tunnel_status')).toEqual(stopped);
    const registry = await admin.ok('get_tunnel_registry_url');
    expect(registry).toEqual({ url: 'http://127.0.0.1', source: 'config' });
    expect(registry).toEqual(await http('/registry-url'));
  });

  // After stop_tunnel: with no tunnel running, a saved custom URL is what registry-url answers.
  it('validate_tunnel_url: a refused URL is valid:false with its checks; this instance, saved, becomes the custom URL', async () => {
    const configured = await http('/registry-url');
    const own = `${t.url}/`;
    const { port } = new URL(t.url);
    for (const [url, failing] of [
      [`ftp://127.0.0.1:${port}/`, 'scheme'],
      [`http://user:secret@127.0.0.1:${port}/`, 'credentials'],
    ]) {
      const checked = await admin.ok<{
        valid: boolean;
        reachable: boolean;
        checks: { name: string; ok: boolean }[];
      }>('validate_tunnel_url', { url, save: false });
      expect(checked, url).toMatchObject({ valid: false, reachable: false });
      expect(checked.checks.find((c) => !c.ok)?.name, url).toBe(failing);
      const res = await t.http
        .post('/api/v1/tunnel/validate-url')
        .set('Authorization', await t.adminAuth())
        .send({ url, save: false });
      expect(res.status).toBe(200);
      expect(checked).toEqual(res.body);
    }
    // Checking only (save:false), even a URL that passes stores nothing.
    const checked = await admin.ok('validate_tunnel_url', { url: t.url, save: false });
    expect(checked).toMatchObject({ url: own, valid: true, reachable: true });
    expect(await http('/registry-url')).toEqual(configured);
    expect(await audit('tunnel.custom_url_changed')).toEqual([]);

    expect(await admin.ok('validate_tunnel_url', { url: t.url })).toEqual(checked);
    const registry = await http('/registry-url');
    expect(registry).toEqual({ url: own, source: 'custom' });
    expect(await admin.ok('get_tunnel_registry_url')).toEqual(registry);
    expect(await audit('tunnel.custom_url_changed')).toMatchObject([
      { actor: ADMIN.clientId, details: { url: own, previous: null } },
    ]);
  });
});
