import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { PROBLEM_CONTENT_TYPE, problemFor } from './problem.js';

/** What Node's HTTP parser refuses before any route sees the request, as status, code and detail. */
function answerFor(code = 'unreadable'): { status: number; code: string; detail: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        code: 'headers_too_large',
        detail: 'The request line and headers exceed the 16 KiB the service reads.',
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        code: 'request_timeout',
        detail: 'The request was not received in full within HTTP_REQUEST_TIMEOUT.',
      };
    default:
      return {
        status: 400,
        code: 'bad_request',
        detail: `The request is not well-formed HTTP/1.1 (${code}).`,
      };
  }
}

const problemBody = (status: number, code: string, detail: string, instance: string): string =>
  JSON.stringify(problemFor({ status, code, detail }, instance, randomUUID()));

/**
 * Answers what Node's HTTP server refuses on its own (a malformed request, headers over the limit, a
 * request not received within HTTP_REQUEST_TIMEOUT, an `Expect` it does not know) with a problem
 * like every other error, instead of Node's bare status line. As Node does, nothing is written once
 * a response to the request has started; the connection is closed either way.
 */
export function answerClientErrors(server: Server): void {
  server.on(
    'clientError',
    (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: ServerResponse }) => {
      if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
        socket.destroy();
        return;
      }
      const answer = answerFor(err.code);
      const body = problemBody(answer.status, answer.code, answer.detail, '');
      socket.end(
        `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\n` +
          `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
      // A peer that never reads its answer must not keep the socket.
      setTimeout(() => socket.destroy(), 1_000).unref();
    },
  );
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const detail = `The service does not meet Expect: ${String(req.headers.expect).slice(0, 64)}; only 100-continue.`;
    const body = problemBody(417, 'expectation_failed', detail, (req.url ?? '').split('?')[0].slice(0, 512));
    res
      .writeHead(417, {
        'Content-Type': PROBLEM_CONTENT_TYPE,
        'Content-Length': Buffer.byteLength(body),
        Connection: 'close',
      })
      .end(body);
  });
}
