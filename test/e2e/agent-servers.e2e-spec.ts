import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { eventually, startTestApp, type TestApp } from '../support/app.js';
import { FAST_AGENT_ENV, freePort, orchestrator } from '../support/stacks.js';

interface WorkerRow {
  id: string;
  name: string;
  status: string;
  connected: boolean;
}

// Agents given several servers: some of them dead loopback ports (nothing listens there), listed
// first, and the agent port by a name (localhost) that resolves to one or more loopback addresses.
describe('an agent with several server addresses', () => {
  let t: TestApp;
  let agentPort = 0;
  /** Ports nothing listens on: three for the agent port, two for HTTP. */
  let dead: number[] = [];
  const agents: AgentProcess[] = [];

  beforeAll(async () => {
    [agentPort, ...dead] = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    t = await startTestApp({
      env: {
        ...FAST_AGENT_ENV,
        AGENT_PORT: String(agentPort),
        AGENT_ENDPOINTS: `127.0.0.1:${dead[0]},localhost:${agentPort}`,
      },
    });
  });
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await t?.close();
  });

  it('gets them in the install command', async () => {
    const api = orchestrator(t);
    const { token } = (await api.post('/join-tokens', {})).body as { token: string };
    const res = await t.http
      .post('/api/v1/tunnel/install-command')
      .set('Authorization', await t.adminAuth())
      .send({ token });
    expect(res.status).toBe(200);
    const list = `127.0.0.1:${dead[0]},localhost:${agentPort}`;
    expect(res.body.linux).toMatch(new RegExp(` --agent-endpoint '${list}'$`));
    expect(res.body.windows).toMatch(new RegExp(` -AgentEndpoint '${list}'$`));
  });

  it('skips the dead ones, connects, and its worker turns healthy', async () => {
    const api = orchestrator(t);
    const token = await api.post('/join-tokens', { pre_approved: true });
    expect(token.status).toBe(201);
    // Each agent starts at a random server: with three of four endpoints dead, and three agents,
    // the dead ones are as good as certain to be tried (and an agent stuck on one fails the test).
    const names = ['multi-1', 'multi-2', 'multi-3'];
    for (const name of names)
      agents.push(
        AgentProcess.start({
          server: `http://127.0.0.1:${dead[3]},http://127.0.0.1:${dead[4]},${t.url}`,
          token: token.body.token as string,
          name,
          args: [
            '--agent-endpoint',
            `127.0.0.1:${dead[0]},127.0.0.1:${dead[1]}`,
            '--agent-endpoint',
            `127.0.0.1:${dead[2]}`,
            '--agent-endpoint',
            `localhost:${agentPort}`,
          ],
        }),
      );
    await eventually(async () => {
      const rows = (await api.get('/workers?limit=200')).body.workers as WorkerRow[];
      return names.every((name) =>
        rows.some((w) => w.name === name && w.connected && w.status === 'healthy'),
      );
    }, 30_000);
    for (const agent of agents) {
      const connected = agent.records().filter((r) => r.msg === 'connected');
      expect(connected.length).toBeGreaterThan(0);
      // Dialled at a loopback address of the name, the certificate checked against the name.
      expect(connected[0].endpoint).toBe(`localhost:${agentPort}`);
      expect(['127.0.0.1', '[::1]'].map((a) => `${a}:${agentPort}`)).toContain(connected[0].address);
      // Every attempt at a dead port was followed by one elsewhere.
      const attempts = agent.records().filter((r) => r.msg === 'connecting');
      expect(attempts.at(-1)?.endpoint).toBe(`localhost:${agentPort}`);
      // 127.0.0.1 for each dead port, and localhost's one or two loopback addresses.
      expect(attempts.every((r) => r.candidates === 4 || r.candidates === 5)).toBe(true);
    }
  });
});
