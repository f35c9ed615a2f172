import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod/v4';
import { proxyServer } from './proxy.js';

// The forwarder between two real SDK peers: an upstream McpServer with tools, resources and prompts
// (what the service grows into), reached by an SDK Client; the proxy's Server in front of it, reached
// by another SDK Client. Whatever the direct client sees, the client through the proxy must see too.

/** Upstream with one of everything; `full: false` gives tools only (the service's first slice). */
function upstreamServer(full: boolean): McpServer {
  const server = new McpServer({ name: 'upstream', version: '1.2.3' }, { instructions: 'Be careful.' });
  server.registerTool('fail', { description: 'Always a tool error' }, () => ({
    isError: true,
    content: [{ type: 'text', text: '{"status":404,"code":"not_found"}' }],
  }));
  if (!full) return server;
  const things = new ResourceTemplate('thing://{id}', {
    list: () => ({ resources: [{ uri: 'thing://1', name: 'one' }] }),
    complete: { id: (value) => ['1', '10'].filter((id) => id.startsWith(value)) },
  });
  server.registerResource('thing', things, { mimeType: 'text/plain' }, (uri, { id }) => {
    if (id !== '1') throw new McpError(ErrorCode.InvalidParams, `No thing ${String(id)}.`, { id });
    return { contents: [{ uri: uri.href, text: 'one' }] };
  });
  server.registerPrompt('diagnose', { argsSchema: { id: z.string() } }, ({ id }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Diagnose ${id}.` } }],
  }));
  return server;
}

const outcome = (answer: Promise<unknown>) =>
  answer.then(
    (result) => ({ result }),
    (err: McpError) => ({ error: { code: err.code, message: err.message, data: err.data } }),
  );

describe('proxyServer', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  async function connect(full: boolean) {
    const upstream = upstreamServer(full);
    const [upstreamEnd, serverEnd] = InMemoryTransport.createLinkedPair();
    await upstream.connect(serverEnd);
    const direct = new Client({ name: 'proxy', version: '1' });
    await direct.connect(upstreamEnd);
    const log: string[] = [];
    const { server } = proxyServer(direct, (line) => log.push(line));
    const [clientEnd, proxyEnd] = InMemoryTransport.createLinkedPair();
    await server.connect(proxyEnd);
    const client = new Client({ name: 'desktop', version: '1' });
    await client.connect(clientEnd);
    closers.push(
      () => client.close(),
      () => server.close(),
      () => direct.close(),
      () => upstream.close(),
    );
    return { upstream, direct, client, log };
  }

  it('offers what upstream offers, without the notifications a stateless service never sends', async () => {
    const { direct, client } = await connect(true);
    expect(direct.getServerCapabilities()).toMatchObject({
      tools: { listChanged: true },
      resources: { listChanged: true },
      prompts: { listChanged: true },
    });
    expect(client.getServerCapabilities()).toEqual({
      tools: {},
      resources: {},
      prompts: {},
      completions: {},
    });
    expect(client.getServerVersion()).toEqual({ name: 'upstream', version: '1.2.3' });
    expect(client.getInstructions()).toBe('Be careful.');
  });

  it('forwards tools, resources and prompts with the same answers and the same errors', async () => {
    const { direct, client } = await connect(true);
    const same = async (ask: (c: Client) => Promise<unknown>) => {
      const through = await outcome(ask(client));
      expect(through).toEqual(await outcome(ask(direct)));
      return through;
    };
    expect(await same((c) => c.listTools())).toMatchObject({ result: { tools: [{ name: 'fail' }] } });
    expect(await same((c) => c.callTool({ name: 'fail', arguments: {} }))).toMatchObject({
      result: { isError: true },
    });
    expect(await same((c) => c.listResources())).toMatchObject({
      result: { resources: [{ uri: 'thing://1' }] },
    });
    await same((c) => c.listResourceTemplates());
    expect(await same((c) => c.readResource({ uri: 'thing://1' }))).toMatchObject({
      result: { contents: [{ text: 'one' }] },
    });
    // A protocol error keeps upstream's code, message and data.
    expect(await same((c) => c.readResource({ uri: 'thing://2' }))).toEqual({
      // The upstream SDK puts its "MCP error <code>: " in the message it sends; the client adds another.
      error: {
        code: ErrorCode.InvalidParams,
        message: 'MCP error -32602: MCP error -32602: No thing 2.',
        data: { id: '2' },
      },
    });
    const complete = {
      ref: { type: 'ref/resource' as const, uri: 'thing://{id}' },
      argument: { name: 'id', value: '1' },
    };
    expect(await same((c) => c.complete(complete))).toMatchObject({
      result: { completion: { values: ['1', '10'] } },
    });
    await same((c) => c.listPrompts());
    expect(await same((c) => c.getPrompt({ name: 'diagnose', arguments: { id: 'web' } }))).toMatchObject({
      result: { messages: [{ content: { text: 'Diagnose web.' } }] },
    });
    expect(await same((c) => c.getPrompt({ name: 'nope' }))).toMatchObject({
      error: { code: ErrorCode.InvalidParams },
    });
  });

  it('without resources or prompts upstream, offers none: asking is "method not found"', async () => {
    const { client } = await connect(false);
    expect(client.getServerCapabilities()).toEqual({ tools: {} });
    for (const ask of [() => client.listResources(), () => client.listPrompts()])
      expect(await outcome(ask())).toMatchObject({ error: { code: ErrorCode.MethodNotFound } });
  });

  it('upstream gone: an internal error in words, also on the log', async () => {
    const { upstream, client, log } = await connect(false);
    await upstream.close();
    expect(await outcome(client.listTools())).toMatchObject({
      error: {
        code: ErrorCode.InternalError,
        message: expect.stringContaining('stack-orchestrator is not answering MCP requests: Not connected'),
      },
    });
    expect(log).toEqual(['stack-orchestrator is not answering MCP requests: Not connected']);
  });
});
