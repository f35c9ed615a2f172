import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { relayTunnel, startRelay, type Relay } from '../support/relay.js';

// A node behind NAT reaches the service only through the tunnel: it enrolls at the tunnel's public
// URL and must be told the tunnel's agent endpoint, so its mutual-TLS stream goes through the relay.
// An agent that enrolls at the direct address keeps the direct endpoint. Stopping the relay proves
// which way each stream goes: only the tunnelled agent loses its connection.

interface Worker {
  name: string;
  status: string;
  connected: boolean;
}

describe('agents through the tunnel', () => {
  let relay: Relay;
  let t: TestApp;
  let publicUrl: string;
  let agentEndpoint: string;
  const agents: AgentProcess[] = [];

  const auth = () => t.adminAuth();
  const worker = async (name: string): Promise<Worker | undefined> => {
    const res = await t.http.get('/api/v1/orchestrator/workers?limit=200').set('Authorization', await auth());
    return (res.body.workers as Worker[]).find((w) => w.name === name);
  };
  const connected = async (name: string) => (await worker(name))?.connected === true;
  const endpointOf = (agent: AgentProcess) =>
    (JSON.parse(readFileSync(join(agent.dataDir, 'identity.json'), 'utf8')) as { agent_endpoint: string })
      .agent_endpoint;
  const joinToken = async () =>
    (
      await t.http
        .post('/api/v1/orchestrator/join-tokens')
        .set('Authorization', await auth())
        .send({ pre_approved: true })
        .expect(201)
    ).body.token as string;
  const tunnelState = async () =>
    (await t.http.get('/api/v1/tunnel/status').set('Authorization', await auth())).body.state as string;

  beforeAll(async () => {
    relay = await startRelay();
    const tunnel = await relayTunnel(relay);
    publicUrl = tunnel.publicUrl;
    agentEndpoint = tunnel.agentEndpoint;
    t = await startTestApp({
      env: {
        ...tunnel.env,
        HEARTBEAT_INTERVAL: '400ms',
        // Machine-wide CPU under a parallel test run may pass 90 %; health is not what is tested here.
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
      },
    });
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop('SIGKILL')));
    for (const a of agents) rmSync(a.dataDir, { recursive: true, force: true });
    await t?.close();
    await relay?.close();
  });

  it('the install command names the tunnel; an agent enrolled there gets the tunnel agent endpoint', async () => {
    const started = await t.http.post('/api/v1/tunnel/start').set('Authorization', await auth());
    expect(started.body).toMatchObject({
      state: 'running',
      public_url: publicUrl,
      agent_endpoint: agentEndpoint,
    });
    const install = await t.http
      .post('/api/v1/tunnel/install-command')
      .set('Authorization', await auth())
      .send({ token: await joinToken() })
      .expect(200);
    expect(install.body.registry_url).toBe(publicUrl);

    // The node knows only the registry URL, as the install command gives it.
    const natted = AgentProcess.start({
      server: install.body.registry_url as string,
      token: await joinToken(),
      name: 'natted',
    });
    const direct = AgentProcess.start({ server: t.url, token: await joinToken(), name: 'direct' });
    agents.push(natted, direct);
    await eventually(async () => (await connected('natted')) && (await connected('direct')), 30_000);
    expect(endpointOf(natted)).toBe(agentEndpoint);
    // The direct agent got the gateway's own endpoint: PUBLIC_URL's host and the port it bound.
    const info = await t.http.get('/api/v1/orchestrator/info').set('Authorization', await auth());
    expect(endpointOf(direct)).toBe(info.body.agent_endpoint);
    expect(endpointOf(direct)).not.toBe(agentEndpoint);
  });

  it("the tunnelled agent's stream goes through the relay: it drops with the relay and comes back with it", async () => {
    await relay.stop();
    await eventually(async () => !(await connected('natted')), 30_000);
    // The service and its direct agent port are still up: the other agent never noticed.
    expect(await connected('direct')).toBe(true);
    await relay.start();
    await eventually(async () => (await tunnelState()) === 'running', 30_000);
    await eventually(() => connected('natted'), 75_000, 250);
    expect(await connected('direct')).toBe(true);
    expect(agents[0].logged('connected')).toBe(true);
  }, 150_000);
});
