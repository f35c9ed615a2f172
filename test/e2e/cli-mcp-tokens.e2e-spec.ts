import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN, startTestApp, type TestApp } from '../support/app.js';
import { createClient, stdioMcp, type StdioMcp } from '../support/mcp-clients.js';
import { requireBuilt } from '../support/stackctl.js';

// `stackctl mcp` keeps working past its tokens' lifetime: it renews them by refresh token, and when
// the service refuses a token (401) or a refresh token, it authenticates again by itself. What it did
// is read from the service's audit trail (each issued token is an event naming its grant).

interface AuditEvent {
  action: string;
  actor: string | null;
  details: { grant?: string };
}

/** The grants of the tokens the service issued to `clientId`, oldest first. */
async function grantsOf(t: TestApp, auth: string, clientId: string): Promise<string[]> {
  const res = await t.http
    .get('/api/v1/orchestrator/audit')
    .query({ action: 'token.issued', limit: '100' })
    .set('Authorization', auth);
  expect(res.status).toBe(200);
  return (res.body.events as AuditEvent[])
    .filter((event) => event.actor === clientId)
    .map((event) => event.details.grant ?? '')
    .reverse();
}

async function tunnelState(mcp: StdioMcp): Promise<unknown> {
  const result = await mcp.client.callTool({ name: 'get_tunnel_status', arguments: {} });
  expect(result.isError).toBeFalsy();
  return (result.structuredContent as { state: string }).state;
}

describe('stackctl mcp renews its tokens', () => {
  const apps: TestApp[] = [];
  const open: StdioMcp[] = [];
  afterAll(async () => {
    await Promise.all(open.map((mcp) => mcp.close()));
    await Promise.all(apps.map((app) => app.close()));
  });

  it('by refresh token as its access token nears expiry: calls past the first token’s end still succeed', async () => {
    requireBuilt();
    // The shortest lifetime the service allows; stackctl renews at half of it.
    const t = await startTestApp({ env: { ACCESS_TOKEN_TTL: '10s' } });
    apps.push(t);
    const client = await createClient(t.url, await t.adminAuth(), 'mcp renewal', ['tunnel:read']);
    const mcp = await stdioMcp(t.url, client);
    open.push(mcp);
    expect(await tunnelState(mcp)).toBe('stopped');
    expect(await grantsOf(t, `Bearer ${(await t.token()).access_token}`, client.clientId)).toEqual([
      'client_credentials',
    ]);

    // Past the end of the first access token.
    await sleep(11_000);
    expect(await tunnelState(mcp)).toBe('stopped');
    const grants = await grantsOf(t, `Bearer ${(await t.token()).access_token}`, client.clientId);
    // Authenticated once; every later token came from the refresh token of the one before.
    expect(grants[0]).toBe('client_credentials');
    expect(grants.length).toBeGreaterThan(1);
    expect(grants.slice(1).every((grant) => grant === 'refresh_token')).toBe(true);
    expect(mcp.stderr()).toBe('');
  });

  it('by client credentials when the service refuses its token and its refresh token', async () => {
    // A service restarted on another database at the same address: it knows neither the signing
    // key of the token held nor the refresh token, but the same bootstrap client.
    const first = await startTestApp();
    apps.push(first);
    const mcp = await stdioMcp(first.url, ADMIN);
    open.push(mcp);
    expect(await tunnelState(mcp)).toBe('stopped');
    const { port } = first.app.getHttpServer().address() as AddressInfo;
    await first.close();
    apps.pop();

    const second = await startTestApp({ env: { PORT: String(port) } });
    apps.push(second);
    expect(second.url).toBe(first.url);
    const auth = await second.adminAuth();
    const before = await grantsOf(second, auth, ADMIN.clientId);

    expect(await tunnelState(mcp)).toBe('stopped');
    // One new token, by client credentials: the 401 was answered by renewing, the refused refresh
    // token by authenticating again.
    expect(await grantsOf(second, auth, ADMIN.clientId)).toEqual([...before, 'client_credentials']);
    expect(mcp.stderr()).toMatch(
      /^stackctl mcp: the refresh token was refused \(The refresh token is invalid, expired or revoked\. \(invalid_grant, request \S+\)\); using the client credentials\.\n$/,
    );
  });
});
