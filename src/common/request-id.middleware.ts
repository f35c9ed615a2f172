import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';

export const REQUEST_ID_HEADER = 'x-request-id';
const ACCEPTED_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives every request an id: the caller's `X-Request-Id` when it is a sane token, else a UUID.
 * The id is echoed in the response header, in problem bodies and in every log record of the request.
 */
export function requestIdMiddleware(req: Request, res: Response, next: NextFunction): void {
  const sent = req.headers[REQUEST_ID_HEADER];
  const id = typeof sent === 'string' && ACCEPTED_ID.test(sent) ? sent : randomUUID();
  (req as Request & { id: string }).id = id;
  res.setHeader('X-Request-Id', id);
  next();
}
