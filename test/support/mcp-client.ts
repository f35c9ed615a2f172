import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';

type ToolResult = Awaited<ReturnType<Client['callTool']>>;

/** The problem a tool error carries as its text. */
export interface ToolProblem {
  status: number;
  code: string;
  title: string;
  detail: string;
  errors?: { path: string; message: string; category?: string }[];
}

const textOf = (result: ToolResult): string => (result.content as { text: string }[])[0].text;

export function problemOf(result: ToolResult): ToolProblem {
  expect(result.isError, textOf(result)).toBe(true);
  return JSON.parse(textOf(result)) as ToolProblem;
}

/** A successful result's structured content, after checking the text says the same. */
export function valueOf(result: ToolResult): Record<string, unknown> {
  expect(result.isError, textOf(result)).toBeFalsy();
  expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);
  return result.structuredContent as Record<string, unknown>;
}

/**
 * The SDK's own client over Streamable HTTP at `<url>/mcp` with a Bearer token. It lists the tools
 * first, which makes the client check every structured result against the tool's output schema.
 */
export async function connectMcp(url: string, token: string): Promise<McpClient> {
  const client = new Client({ name: 'e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  await client.listTools();
  return Object.assign(client, {
    /** Calls a tool that must succeed; its structured content, which equals its text. */
    async ok<T = Record<string, unknown>>(name: string, args: Record<string, unknown> = {}): Promise<T> {
      return valueOf(await client.callTool({ name, arguments: args })) as T;
    },
    /** Calls a tool that must fail; the problem it answers. */
    async refused(name: string, args: Record<string, unknown> = {}): Promise<ToolProblem> {
      return problemOf(await client.callTool({ name, arguments: args }));
    },
  });
}

export type McpClient = Client & {
  ok<T = Record<string, unknown>>(name: string, args?: Record<string, unknown>): Promise<T>;
  refused(name: string, args?: Record<string, unknown>): Promise<ToolProblem>;
};
