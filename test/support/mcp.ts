import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect } from 'vitest';

/**
 * The SDK's own MCP client over Streamable HTTP at `${baseUrl}/mcp` with a Bearer token. It lists
 * the tools first: the SDK client then checks every structured result against its output schema.
 */
export async function mcpClient(baseUrl: string, token: string): Promise<Client> {
  const client = new Client({ name: 'e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  await client.listTools();
  return client;
}

/** The problem a tool error carries as its text. */
export interface ToolProblem {
  status: number;
  code: string;
  detail: string;
  errors?: unknown[];
}

type ToolResult = Awaited<ReturnType<Client['callTool']>>;

export function problemOf(result: ToolResult): ToolProblem {
  expect(result.isError).toBe(true);
  return JSON.parse((result.content as { text: string }[])[0].text) as ToolProblem;
}

/** A successful result's structured content, after checking the text says the same. */
export function valueOf(result: ToolResult): Record<string, unknown> {
  expect(result.isError).toBeFalsy();
  expect(JSON.parse((result.content as { text: string }[])[0].text)).toEqual(result.structuredContent);
  return result.structuredContent as Record<string, unknown>;
}
