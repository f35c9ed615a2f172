import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';

export const REQUEST_ID_HEADER = 'x-request-id';
const ACCEPTED_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives a request its id: the caller's `X-Request-Id` when it is a sane token, else a UUID.
 * The id is echoed in the response header, in problem bodies and in every log record of the request.
 */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const sent = req.headers[REQUEST_ID_HEADER];
  const id = typeof sent === 'string' && ACCEPTED_ID.test(sent) ? sent : randomUUID();
  (req as IncomingMessage & { id: string }).id = id;
  res.setHeader('X-Request-Id', id);
  return id;
}
