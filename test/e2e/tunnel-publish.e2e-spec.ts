import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobEntity } from '../../src/server/jobs/entities/job.entity.js';
import { StackPublishing } from '../../src/server/stacks/stack-publishing.js';
import type { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { send, type Received } from '../support/ingress.js';
import { startRelay, type Relay } from '../support/relay.js';
import { connectedAgent, freePort, httpGet, orchestrator, servicePid, shopYaml } from '../support/stacks.js';

// A stack service declared `public` is registered under its owner's base subdomain when a deploy
// succeeds, answers through the ingress (the service's own HTTP port, and the ssh relay in front of
// it) by that name, and is gone when the stack is destroyed. Real agent (process driver), real sshd.

const DOMAIN = 'tunnel.test';

interface ServicesBody {
  base_id: string;
  services: { name: string; subdomain: string; url: string; target: string }[];
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const text = (r: Received) => r.body.toString('utf8');
const problem = (r: Received) => ({
  ...(JSON.parse(text(r)) as { code: string; detail: string }),
  status: r.status,
  contentType: r.headers['content-type'],
});

describe('publishing stack services through the tunnel ingress', () => {
  let relay: Relay;
  let t: TestApp;
  let api: ReturnType<typeof orchestrator>;
  let agent: AgentProcess;
  let workerId: string;
  let appPort: number;
  let relayPort: number;
  let port: number;
  let stackId: string;
  let baseId: string;
  let host: string;

  const tunnel = async (path: string, auth?: string) =>
    t.http.get(`/api/v1/tunnel${path}`).set('Authorization', auth ?? (await t.adminAuth()));
  const services = async () => (await tunnel(`/subdomains/${baseId}/services`)).body as ServicesBody;
  const audit = async (action: string) =>
    (await api.get(`/audit?action=${action}`)).body.events as {
      owner: string;
      actor: string;
      target: string;
      details: Record<string, unknown>;
    }[];
  const deployed = async (source: string) => {
    const put = await api.yaml('put', `/stacks/${stackId}`, source);
    expect(put.status, put.text).toBe(200);
    const job = await api.post(`/stacks/${stackId}/deploy`);
    expect(job.status, job.text).toBe(202);
    return api.jobUntil(job.body.id as string, ['succeeded', 'failed']);
  };

  /**
   * A job reads as ended before its stack's bookkeeping (status, publication) is done: wait for the
   * stack's status, then for the publication's audit record (the last thing it writes).
   */
  const settled = async (status: string, publications: number) => {
    await eventually(async () => (await api.get(`/stacks/${stackId}`)).body.status === status);
    await eventually(async () => (await audit('tunnel.services_published')).length === publications);
  };
  /** A succeeded job has started the process; it listens a moment later. */
  const answering = (version: string) =>
    eventually(async () => {
      const r = await httpGet(port, '/version');
      return typeof r === 'object' && r.text === version;
    });

  beforeAll(async () => {
    relay = await startRelay();
    relayPort = await freePort();
    t = await startTestApp({
      env: {
        HEARTBEAT_INTERVAL: '300ms',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
        TUNNEL_BASE_DOMAIN: DOMAIN,
        TUNNEL_SSH_HOST: relay.host,
        TUNNEL_SSH_PORT: String(relay.port),
        TUNNEL_SSH_USER: relay.user,
        TUNNEL_SSH_KEY_FILE: relay.keyFile,
        TUNNEL_SSH_HOST_KEY: relay.hostKeyFingerprint,
        TUNNEL_SSH_REMOTE_PORT: String(relayPort),
        TUNNEL_SSH_AGENT_REMOTE_PORT: String(await freePort()),
        TUNNEL_SSH_BIND_ADDRESS: '127.0.0.1',
        TUNNEL_PUBLIC_URL: `http://127.0.0.1:${relayPort}`,
      },
    });
    appPort = Number(new URL(t.url).port);
    api = orchestrator(t);
    ({ agent, workerId } = await connectedAgent(t, 'publish-node'));
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
    await relay?.close();
  });

  it("a successful deploy registers the public service under the owner's base, created then", async () => {
    port = await freePort();
    const created = await api.yaml('post', '/stacks', shopYaml(port, { isPublic: true, version: 'one' }));
    expect(created.status, created.text).toBe(201);
    stackId = created.body.id as string;
    // Nothing is published before a deploy, so the owner has no base yet.
    expect((await tunnel('/subdomains')).body).toEqual({ subdomains: [] });

    const job = await api.jobUntil((await api.post(`/stacks/${stackId}/deploy`)).body.id as string, [
      'succeeded',
      'failed',
    ]);
    expect(job.status, JSON.stringify(job)).toBe('succeeded');
    await settled('deployed', 1);
    await answering('one');

    const list = await tunnel('/subdomains');
    expect(list.status).toBe(200);
    expect(list.body.subdomains).toHaveLength(1);
    baseId = list.body.subdomains[0].base_id as string;
    expect(baseId).toMatch(/^[a-z2-9]{10}$/);
    expect(list.body.subdomains[0]).toEqual({
      base_id: baseId,
      subdomain: `${baseId}.${DOMAIN}`,
      url: `http://${baseId}.${DOMAIN}`,
      created_at: expect.any(String) as string,
    });
    host = `web-shop.${baseId}.${DOMAIN}`;
    expect(await services()).toEqual({
      base_id: baseId,
      services: [{ name: 'web', subdomain: host, url: `http://${host}`, target: `127.0.0.1:${port}` }],
    });

    expect(await audit('tunnel.base_created')).toMatchObject([{ owner: 'default', target: baseId }]);
    expect(await audit('tunnel.services_published')).toMatchObject([
      {
        owner: 'default',
        target: stackId,
        details: {
          stack: 'shop',
          worker_id: workerId,
          published: [{ subdomain: `web-shop.${baseId}`, target: `127.0.0.1:${port}` }],
          removed: [],
          refused: [],
        },
      },
    ]);
  });

  it("answers on the service's own HTTP port by its subdomain (any case, with a port); other names are 404", async () => {
    const answer = await send(appPort, { path: '/version', headers: { host } });
    expect({ status: answer.status, body: text(answer) }).toEqual({ status: 200, body: 'one' });
    const shouted = await send(appPort, {
      path: '/version',
      headers: { host: `${host.toUpperCase()}:${appPort}` },
    });
    expect(text(shouted)).toBe('one');

    const unknown = await send(appPort, {
      path: '/version',
      headers: { host: `api-shop.${baseId}.${DOMAIN}` },
    });
    expect(problem(unknown)).toMatchObject({
      status: 404,
      contentType: expect.stringMatching(/^application\/problem\+json/) as string,
      code: 'subdomain_not_found',
    });
    // The API itself still answers on the same port for its own host.
    expect((await send(appPort, { path: '/health/live', headers: { host: '127.0.0.1' } })).status).toBe(200);
  });

  it('answers through the ssh relay by its subdomain once the tunnel runs', async () => {
    const started = await t.http.post('/api/v1/tunnel/start').set('Authorization', await t.adminAuth());
    expect(started.body).toMatchObject({ state: 'running' });
    const through = await send(relayPort, { path: '/version', headers: { host } });
    expect({ status: through.status, body: text(through) }).toEqual({ status: 200, body: 'one' });
  });

  it("another owner sees no subdomains and the first owner's base is not found (404, never 403)", async () => {
    const client = await t.http
      .post('/api/v1/auth/clients')
      .set('Authorization', await t.adminAuth())
      .send({ name: 'acme', owner: 'acme', scopes: ['tunnel:read', 'tunnel:write'] });
    expect(client.status, client.text).toBe(201);
    const token = await t.token({
      clientId: client.body.client_id as string,
      secret: client.body.client_secret as string,
    });
    const acme = `Bearer ${token.access_token}`;
    expect((await tunnel('/subdomains', acme)).body).toEqual({ subdomains: [] });
    const foreign = await tunnel(`/subdomains/${baseId}/services`, acme);
    expect(foreign.status).toBe(404);
    expect(foreign.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(foreign.body.code).toBe('not_found');
    expect((await tunnel('/subdomains/nosuchbase/services')).status).toBe(404);
  });

  it('a failed deploy changes nothing; a successful one without public removes the service', async () => {
    const failed = await deployed(
      shopYaml(port, { isPublic: false, version: 'two', envRef: 'NOT_SET_ON_THE_AGENT' }),
    );
    expect(failed.status).toBe('failed');
    await settled('failed', 1);
    expect((await services()).services.map((s) => s.subdomain)).toEqual([host]);

    const hidden = await deployed(shopYaml(port, { isPublic: false, version: 'three' }));
    expect(hidden.status, JSON.stringify(hidden)).toBe('succeeded');
    await settled('deployed', 2);
    expect(await services()).toEqual({ base_id: baseId, services: [] });
    expect(problem(await send(appPort, { path: '/version', headers: { host } }))).toMatchObject({
      status: 404,
      code: 'subdomain_not_found',
    });
    await answering('three');
    const published = await audit('tunnel.services_published');
    expect(published).toHaveLength(2);
    expect(published.find((e) => (e.details.published as unknown[]).length === 0)).toMatchObject({
      details: { removed: [`web-shop.${baseId}`] },
    });
    // The base stays the owner's: the next publication lands under the same name.
    expect((await tunnel('/subdomains')).body.subdomains).toHaveLength(1);

    const again = await deployed(shopYaml(port, { isPublic: true, version: 'four' }));
    expect(again.status).toBe('succeeded');
    await settled('deployed', 3);
    await answering('four');
    expect((await services()).services.map((s) => s.subdomain)).toEqual([host]);
    expect(text(await send(appPort, { path: '/version', headers: { host } }))).toBe('four');
  });

  it('a stopped stack service answers 502 problem+json without naming its address', async () => {
    const pid = servicePid(agent.dataDir, stackId, 'web');
    expect(pid).toBeGreaterThan(0);
    // Killed outright (restart: never keeps it down); a graceful stop could wait on open connections.
    process.kill(pid, 'SIGKILL');
    await eventually(() => !alive(pid));
    // On a connection of its own: a pooled keep-alive socket would read as reset instead.
    await expect(send(port, { path: '/version' })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    const answer = problem(await send(appPort, { path: '/version', headers: { host } }));
    expect(answer).toMatchObject({
      status: 502,
      contentType: expect.stringMatching(/^application\/problem\+json/) as string,
      code: 'service_unavailable',
    });
    expect(answer.detail).toContain('shop');
    expect(answer.detail).not.toContain('127.0.0.1');
  });

  it('destroying the stack removes the registration, and the name answers 404', async () => {
    const destroy = await api.delete(`/stacks/${stackId}`);
    expect(destroy.status).toBe(202);
    expect((await api.jobUntil(destroy.body.id as string, ['succeeded', 'failed'])).status).toBe('succeeded');
    // The stack row goes with the job's success, after its services were unpublished.
    expect((await api.get(`/stacks/${stackId}`)).status).toBe(404);
    expect(await services()).toEqual({ base_id: baseId, services: [] });
    expect(problem(await send(appPort, { path: '/', headers: { host } }))).toMatchObject({
      status: 404,
      contentType: expect.stringMatching(/^application\/problem\+json/) as string,
      code: 'subdomain_not_found',
    });
    expect(await audit('tunnel.services_unpublished')).toMatchObject([
      { owner: 'default', target: stackId, details: { stack: 'shop', removed: [`web-shop.${baseId}`] } },
    ]);
  });

  it('a name another stack of the owner holds stays with that stack: the later one is refused', async () => {
    // my-web + shop and my + web-shop are both "my-web-shop".
    const ports = [await freePort(), await freePort()];
    const ids: string[] = [];
    for (const [i, names] of [
      { stack: 'shop', service: 'my-web' },
      { stack: 'web-shop', service: 'my' },
    ].entries()) {
      const created = await api.yaml(
        'post',
        '/stacks',
        shopYaml(ports[i], { isPublic: true, version: names.stack, ...names }),
      );
      expect(created.status, created.text).toBe(201);
      ids.push(created.body.id as string);
      const job = await api.post(`/stacks/${ids[i]}/deploy`);
      expect((await api.jobUntil(job.body.id as string, ['succeeded', 'failed'])).status).toBe('succeeded');
      await eventually(async () => (await audit('tunnel.services_published')).length === 4 + i);
    }
    expect((await services()).services).toEqual([
      expect.objectContaining({ name: 'my-web', target: `127.0.0.1:${ports[0]}` }),
    ]);
    const refused = (await audit('tunnel.services_published')).find((e) => e.target === ids[1]);
    expect(refused?.details).toMatchObject({ published: [], refused: [`my-web-shop.${baseId}`] });
    port = ports[0];
    await answering('shop');
    const answer = await send(appPort, {
      path: '/version',
      headers: { host: `my-web-shop.${baseId}.${DOMAIN}` },
    });
    expect(text(answer)).toBe('shop');
    for (const id of ids) expect((await api.delete(`/stacks/${id}`)).status).toBe(202);
  });

  it('a batch of finished deploys publishes and removes as one job at a time would', async () => {
    // The agents' results of a write batch reach StackPublishing.finishedMany together.
    const publishing = t.app.get(StackPublishing);
    const made = async (name: string, isPublic: boolean) => {
      const created = await api.yaml(
        'post',
        '/stacks',
        shopYaml(await freePort(), { isPublic, version: name, stack: name }),
      );
      expect(created.status, created.text).toBe(201);
      return created.body.id as string;
    };
    const item = (stackId: string, name: string, revision: number, deployedRevision: number | null) => ({
      job: {
        id: randomUUID(),
        type: 'provision',
        status: 'succeeded',
        stackId,
        revision,
        workerId,
        createdBy: 'batch-test',
      } as JobEntity,
      stack: { id: stackId, name, owner: 'default', deployedRevision },
    });
    const [a, b, c] = [
      await made('batch-a', true),
      await made('batch-b', true),
      await made('batch-c', false),
    ];
    // As stored (the API lists a stack's services once it is deployed; these never were).
    const subdomains = async () =>
      (
        await t.app
          .get(DataSource)
          .query<{ subdomain: string }[]>('SELECT subdomain FROM tunnel_services ORDER BY subdomain')
      ).map((r) => r.subdomain);
    await publishing.finishedMany([item(b, 'batch-b', 1, null)]);
    expect(await subdomains()).toContain(`web-batch-b.${baseId}`);
    // b's second revision has no public service; a is new and public; c has none and never had.
    const put = await api.yaml(
      'put',
      `/stacks/${b}`,
      shopYaml(await freePort(), { isPublic: false, version: 'b2', stack: 'batch-b' }),
    );
    expect(put.status, put.text).toBe(200);
    // The revision cache about full: reading this batch's revisions clears it on the way, which
    // must not lose any of them.
    const cache = (publishing as unknown as { publicOf: Map<string, unknown> }).publicOf;
    for (let i = 0; cache.size < 9_999; i++) cache.set(`filler-${i}`, []);
    await publishing.finishedMany([
      item(a, 'batch-a', 1, null),
      item(b, 'batch-b', 2, 1),
      item(c, 'batch-c', 1, null),
    ]);
    const now = await subdomains();
    expect(now).toContain(`web-batch-a.${baseId}`);
    expect(now).not.toContain(`web-batch-b.${baseId}`);
    expect(now.filter((s) => s.includes('batch-c'))).toEqual([]);
    const records = await audit('tunnel.services_published');
    expect(records.filter((e) => e.target === b).map((e) => e.details.removed)).toEqual([
      [`web-batch-b.${baseId}`],
      [],
    ]);
    expect(records.filter((e) => e.target === c)).toEqual([]);
  });
});
