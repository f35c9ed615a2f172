// `POST /mcp`: the Model Context Protocol over Streamable HTTP (stateless, JSON responses). The
// messages are JSON-RPC 2.0; the methods (initialize, tools/list, tools/call, resources/*,
// prompts/*) and their results are the MCP specification's (docs/mcp.md lists the tools).

export type JsonRpcId = string | number;

/** A request (with an id) or a notification (without one). */
export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id?: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcResult {
  jsonrpc: '2.0';
  id: JsonRpcId;
  /** The method's result, as the MCP specification defines it. */
  result: Record<string, unknown>;
}

export interface JsonRpcError {
  jsonrpc: '2.0';
  /** null when the request could not be read far enough to know its id. */
  id: JsonRpcId | null;
  error: { code: number; message: string; data?: unknown };
}

export type JsonRpcResponse = JsonRpcResult | JsonRpcError;
