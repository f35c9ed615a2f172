import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AnySchema, SchemaOutput } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CompleteRequestSchema,
  CompleteResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  ListPromptsRequestSchema,
  ListPromptsResultSchema,
  ListResourcesRequestSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesRequestSchema,
  ListResourceTemplatesResultSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  McpError,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  type ClientRequest,
  type ServerCapabilities,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { describeUpstreamError } from './upstream.js';

/**
 * How long one forwarded request may take. The desktop client decides when to give up (it cancels,
 * and the cancellation is forwarded); this only ends a request nobody cancels.
 */
const UPSTREAM_TIMEOUT_MS = 10 * 60_000;

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/**
 * A low-level MCP Server that answers each request by sending it on to `upstream` (the service's
 * /mcp) and passing back its answer as it is: a tool error stays a tool result with `isError`, a
 * protocol error keeps its code, message and data. It offers what upstream offers and nothing more:
 * a method upstream has no capability for is answered "method not found" by the SDK, as upstream
 * would. `log` hears failures to reach the service (stderr: stdout carries JSON-RPC only).
 * `settled()` resolves once no forwarded request is waiting for upstream, its answer sent.
 */
export function proxyServer(
  upstream: Client,
  log: (line: string) => void,
): { server: Server; settled: () => Promise<void> } {
  const capabilities = forwardedCapabilities(upstream.getServerCapabilities() ?? {});
  const info = upstream.getServerVersion() ?? { name: 'stack-orchestrator', version: 'unknown' };
  const server = new Server(info, { capabilities, instructions: upstream.getInstructions() });

  const pending = new Set<Promise<unknown>>();
  const forward =
    <S extends AnySchema>(result: S) =>
    (request: ClientRequest, extra: Extra): Promise<SchemaOutput<S>> => {
      const answer = upstream
        .request(request, result, { signal: extra.signal, timeout: UPSTREAM_TIMEOUT_MS })
        .catch((err: unknown) => {
          throw forwardedError(err, log);
        });
      const done = answer.catch(() => undefined);
      pending.add(done);
      void done.then(() => pending.delete(done));
      return answer;
    };
  // The SDK starts a handler, and sends its answer, in callbacks of promises: a turn of the event
  // loop lets the ones due run before `pending` is looked at.
  const settled = async (): Promise<void> => {
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      if (pending.size === 0) return;
      await Promise.all(pending);
    }
  };

  if (capabilities.tools) {
    server.setRequestHandler(ListToolsRequestSchema, forward(ListToolsResultSchema));
    server.setRequestHandler(CallToolRequestSchema, forward(CallToolResultSchema));
  }
  if (capabilities.resources) {
    server.setRequestHandler(ListResourcesRequestSchema, forward(ListResourcesResultSchema));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, forward(ListResourceTemplatesResultSchema));
    server.setRequestHandler(ReadResourceRequestSchema, forward(ReadResourceResultSchema));
  }
  if (capabilities.prompts) {
    server.setRequestHandler(ListPromptsRequestSchema, forward(ListPromptsResultSchema));
    server.setRequestHandler(GetPromptRequestSchema, forward(GetPromptResultSchema));
  }
  if (capabilities.completions) {
    server.setRequestHandler(CompleteRequestSchema, forward(CompleteResultSchema));
  }
  return { server, settled };
}

/**
 * Upstream's capabilities for what this proxy forwards. `listChanged` and `subscribe` are left out:
 * the service is stateless (it sends no notifications) and this proxy has no subscription to relay.
 */
export function forwardedCapabilities(upstream: ServerCapabilities): ServerCapabilities {
  const capabilities: ServerCapabilities = {};
  if (upstream.tools) {
    const { listChanged: _, ...tools } = upstream.tools;
    capabilities.tools = tools;
  }
  if (upstream.resources) {
    const { listChanged: _, subscribe: __, ...resources } = upstream.resources;
    capabilities.resources = resources;
  }
  if (upstream.prompts) {
    const { listChanged: _, ...prompts } = upstream.prompts;
    capabilities.prompts = prompts;
  }
  if (upstream.completions) capabilities.completions = upstream.completions;
  return capabilities;
}

/**
 * What the SDK's Server answers with for a thrown error: its `code`, `message` and `data` as they
 * are. An McpError's message carries an "MCP error <code>: " prefix the SDK added when it read
 * upstream's answer; it is taken off so the client reads upstream's own words.
 */
class ForwardedError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

function forwardedError(err: unknown, log: (line: string) => void): ForwardedError {
  if (err instanceof McpError) {
    const prefix = `MCP error ${err.code}: `;
    const message = err.message.startsWith(prefix) ? err.message.slice(prefix.length) : err.message;
    return new ForwardedError(err.code, message, err.data);
  }
  // Not an answer of the service's MCP server: the token endpoint, HTTP or the network failed.
  const message = `stack-orchestrator is not answering MCP requests: ${describeUpstreamError(err)}`;
  log(message);
  return new ForwardedError(ErrorCode.InternalError, message);
}
