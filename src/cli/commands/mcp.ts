import { Console } from 'node:console';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Connection } from '../args.js';
import { proxyServer } from '../mcp/proxy.js';
import { connectUpstream } from '../mcp/upstream.js';
import { clean } from '../output.js';
import { TokenSource } from '../tokens.js';

/**
 * stackctl mcp: an MCP server on standard input and output for desktop clients that only start
 * local programs, forwarding every request to the service's /mcp with tokens it fetches and renews
 * itself. Connects to the service first, so wrong credentials end the process with their error on
 * stderr before any JSON-RPC is read; then serves until standard input ends.
 */
export async function runMcp(connection: Connection): Promise<void> {
  keepStdoutForJsonRpc();
  const log = (line: string) => console.error(`stackctl mcp: ${clean(line)}`);
  const tokens = new TokenSource(connection, log);
  const upstream = await connectUpstream(connection.server, tokens);
  upstream.onerror = (err) => log(`the connection to the service reported: ${err.message}`);

  const { server, settled } = proxyServer(upstream, log);
  server.onerror = (err) => log(err.message);
  const closed = new Promise<void>((resolve) => (server.onclose = resolve));
  // The SDK's stdio transport does not notice the client going away: the end of input is that.
  // Requests read before it are still answered (a client may write its requests and close).
  process.stdin.once('end', () => void settled().then(() => server.close()));
  await server.connect(new StdioServerTransport());
  await closed;
  await upstream.close();
}

/**
 * Standard output carries JSON-RPC and nothing else: whatever would print there with console
 * (stackctl's own output helpers, a library's warning) goes to stderr instead.
 */
function keepStdoutForJsonRpc(): void {
  const stderr = new Console({ stdout: process.stderr, stderr: process.stderr });
  console.log = stderr.log.bind(stderr);
  console.info = stderr.info.bind(stderr);
  console.debug = stderr.debug.bind(stderr);
  console.dir = stderr.dir.bind(stderr);
  console.table = stderr.table.bind(stderr);
}
