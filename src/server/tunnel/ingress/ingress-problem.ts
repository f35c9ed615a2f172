import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROBLEM_CONTENT_TYPE, problemType, type Problem } from '../../common/problem.js';
import { assignRequestId } from '../../common/request-id.middleware.js';
import { SECURITY_HEADERS } from '../../common/security-headers.js';
import { pathOfUrl } from '../../common/paths.js';

/** An answer the ingress gives itself, in place of the service's. */
export interface IngressProblem {
  status: number;
  code: string;
  detail: string;
}

export const subdomainNotFound = (host: string): IngressProblem => ({
  status: 404,
  code: 'subdomain_not_found',
  detail: `No service is published at ${host}.`,
});

/** Names the service, never its worker's address: that stays inside the orchestrator's logs. */
export const serviceUnavailable = (target: { service: string; stack: string }): IngressProblem => ({
  status: 502,
  code: 'service_unavailable',
  detail: `Service ${target.service} of stack ${target.stack} cannot be reached; it may be stopped or starting.`,
});

export const lookupUnavailable: IngressProblem = {
  status: 503,
  code: 'unavailable',
  detail: 'The published services cannot be looked up right now; retry shortly.',
};

export const notForwardable: IngressProblem = {
  status: 400,
  code: 'bad_request',
  detail: 'The request cannot be forwarded to the service.',
};

export const onlyWebSocketUpgrades: IngressProblem = {
  status: 400,
  code: 'bad_request',
  detail: 'Only WebSocket upgrades are forwarded to published services.',
};

/** The project's problem shape; `instance` is the path without the query, as in docs/api.md. */
function problemBody(req: IncomingMessage, problem: IngressProblem, requestId: string): string {
  const body: Problem = {
    type: problemType(problem.code),
    title: STATUS_CODES[problem.status] ?? 'Error',
    status: problem.status,
    detail: problem.detail,
    instance: pathOfUrl(req.url ?? '/'),
    code: problem.code,
    request_id: requestId,
  };
  return JSON.stringify(body);
}

function problemHeaders(body: string, requestId: string): Record<string, string | number> {
  return {
    ...SECURITY_HEADERS,
    'Content-Type': PROBLEM_CONTENT_TYPE,
    'Content-Length': Buffer.byteLength(body),
    'X-Request-Id': requestId,
  };
}

/**
 * Answers with a problem, or cuts the connection when the service's own status line is already on
 * its way (the client then sees an aborted response, not a truncated one that looks whole).
 */
export function sendIngressProblem(req: IncomingMessage, res: ServerResponse, problem: IngressProblem): void {
  if (res.destroyed) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const requestId = (req as IncomingMessage & { id?: string }).id ?? assignRequestId(req, res);
  const body = problemBody(req, problem, requestId);
  // A body the client is still sending would otherwise be read as the next request.
  if (!req.complete) res.setHeader('Connection', 'close');
  res.writeHead(problem.status, problemHeaders(body, requestId));
  res.end(body);
}

/** The same answer on a socket taken over by an upgrade request; the connection is closed after. */
export function writeSocketProblem(req: IncomingMessage, socket: Duplex, problem: IngressProblem): void {
  if (socket.destroyed || !socket.writable) return;
  const requestId = (req as IncomingMessage & { id?: string }).id ?? randomUUID();
  const body = problemBody(req, problem, requestId);
  const headers = Object.entries({ ...problemHeaders(body, requestId), Connection: 'close' })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n${headers}\r\n${body}`);
  lingerThenDestroy(socket);
}

/** How long a socket we finished writing waits for the client to close before we close it. */
const LINGER_MS = 5000;

/**
 * Closes a socket after the answer was written: an immediate destroy could reset the connection
 * while the client still has our answer unread in its buffers, so unread input is drained and
 * the client gets a few seconds to close first; one that never does cannot hold the socket.
 */
export function lingerThenDestroy(socket: Duplex): void {
  socket.resume();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
