import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CliError } from '../errors.js';
import { describeFetchError, isObject, stringField } from '../http.js';
import type { TokenSource } from '../tokens.js';

// src/cli/mcp and dist/cli/mcp both sit three levels below the package root.
const VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * An SDK Client connected (initialized) to the service's /mcp over Streamable HTTP, each request
 * with a Bearer token of `tokens`. A failure to connect is a CliError in words an operator can act on.
 */
export async function connectUpstream(server: URL, tokens: TokenSource): Promise<Client> {
  const url = new URL('mcp', server);
  const client = new Client({ name: 'stackctl', version: VERSION });
  const transport = new StreamableHTTPClientTransport(url, { fetch: authorizedFetch(tokens) });
  try {
    await client.connect(transport);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`cannot open the MCP endpoint ${url.href}: ${describeUpstreamError(err)}`);
  }
  return client;
}

/**
 * fetch with the current token; a 401 (a token the service no longer takes) is answered by asking
 * for a new one and sending the request once more. The body is the transport's JSON text, so it can
 * be sent twice.
 */
function authorizedFetch(tokens: TokenSource): FetchLike {
  const send = (url: string | URL, init: RequestInit | undefined, token: string) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    // The transport gives every request the one signal of its whole life, and fetch takes its abort
    // listener off a signal only once the request is garbage: over a long session they pile up (and
    // Node warns on stderr). A signal per request follows the transport's without a listener on it.
    const signal = init?.signal ? AbortSignal.any([init.signal]) : undefined;
    return fetch(url, { ...init, headers, signal });
  };
  return async (url, init) => {
    const token = await tokens.token();
    const first = await send(url, init, token);
    if (first.status !== 401) return first;
    await first.body?.cancel();
    return send(url, init, await tokens.renew(token));
  };
}

/** What went wrong between this process and the service, for an error message or stderr. */
export function describeUpstreamError(err: unknown): string {
  if (err instanceof CliError) return err.message;
  if (err instanceof StreamableHTTPError) return `the service answered HTTP ${err.code}: ${httpDetail(err)}`;
  if (err instanceof TypeError && err.message === 'fetch failed') return describeFetchError(err);
  return err instanceof Error ? err.message : String(err);
}

/** A problem's detail and code from the SDK's message, which quotes the answer's body. */
function httpDetail(err: StreamableHTTPError): string {
  const text = err.message.replace(/^Streamable HTTP error: (Error POSTing to endpoint: )?/, '');
  try {
    const body: unknown = JSON.parse(text);
    if (isObject(body)) {
      const detail = stringField(body, 'detail') ?? stringField(body, 'title');
      const code = stringField(body, 'code');
      if (detail !== undefined) return code === undefined ? detail : `${detail} (${code})`;
    }
  } catch {
    // Not JSON: the text as it is.
  }
  return text;
}
