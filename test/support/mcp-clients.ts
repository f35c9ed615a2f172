import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';
import { ADMIN } from './app.js';
import { CLI } from './stackctl.js';

export interface Credentials {
  clientId: string;
  secret: string;
}

/** The environment `stackctl mcp` runs with: the server and the client, nothing of the test's shell. */
export const mcpEnv = (url: string, client: Credentials): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  STACKCTL_SERVER: url,
  STACKCTL_CLIENT_ID: client.clientId,
  STACKCTL_CLIENT_SECRET: client.secret,
});

/** An SDK client of the built `stackctl mcp` over stdio, and what the program wrote to stderr. */
export interface StdioMcp {
  client: Client;
  stderr(): string;
  /** Closes the client (its stdin ends); checks that stdout carried JSON-RPC only and no secret showed. */
  close(): Promise<void>;
}

/** Starts `stackctl mcp` with the SDK's own stdio client transport and initializes it. */
export async function stdioMcp(url: string, credentials: Credentials): Promise<StdioMcp> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp'],
    env: mcpEnv(url, credentials),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'e2e-stdio', version: '1.0.0' });
  // A line on stdout that is not JSON-RPC shows up here (the transport cannot parse it).
  const errors: Error[] = [];
  client.onerror = (err) => errors.push(err);
  await client.connect(transport);
  return {
    client,
    stderr: () => stderr,
    close: async () => {
      await client.close();
      expect(errors).toEqual([]);
      for (const secret of [ADMIN.secret, credentials.secret]) expect(stderr).not.toContain(secret);
    },
  };
}

/** An SDK client of the service's /mcp over Streamable HTTP with an access token. */
export async function httpMcp(url: string, accessToken: string): Promise<Client> {
  const client = new Client({ name: 'e2e-http', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${accessToken}` } },
    }),
  );
  return client;
}

/** A request's answer or its protocol error, for comparing two servers' outcomes. */
export const outcome = (answer: Promise<unknown>): Promise<unknown> =>
  answer.then(
    (result) => ({ result }),
    (err: { code?: unknown; message?: unknown; data?: unknown }) => ({
      error: { code: err.code, message: err.message, data: err.data },
    }),
  );

/** The problem a tool error result carries as its text. */
export function toolProblem(result: Awaited<ReturnType<Client['callTool']>>): Record<string, unknown> {
  expect(result.isError).toBe(true);
  return JSON.parse((result.content as { text: string }[])[0].text) as Record<string, unknown>;
}

/** A new client of the service (by the bootstrap admin) with these scopes, of `owner` if given. */
export async function createClient(
  url: string,
  adminAuth: string,
  name: string,
  scopes: string[],
  owner?: string,
): Promise<Credentials> {
  const res = await fetch(`${url}/api/v1/auth/clients`, {
    method: 'POST',
    headers: { authorization: adminAuth, 'content-type': 'application/json' },
    body: JSON.stringify({ name, scopes, ...(owner ? { owner } : {}) }),
  });
  expect(res.status).toBe(201);
  const body = (await res.json()) as { client_id: string; client_secret: string };
  return { clientId: body.client_id, secret: body.client_secret };
}
