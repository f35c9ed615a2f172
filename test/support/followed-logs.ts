import { request, type IncomingMessage } from 'node:http';

/** A followed stack log (`GET .../stacks/{id}/logs?follow=true`) as a test holds it open. */
export interface Followed {
  res: IncomingMessage;
  /** Resolves when the response ends (the service closed it). */
  ended: Promise<void>;
  /** What arrived so far. */
  body: () => string;
  /** Closes the client's end. */
  close: () => void;
}

/** Opens a followed log of a stack at `url` with the `authorization` given and any more headers. */
export const followLogs = (
  url: string,
  stackId: string,
  authorization: string,
  headers: Record<string, string> = {},
): Promise<Followed> =>
  new Promise<Followed>((resolve, reject) => {
    const req = request(`${url}/api/v1/orchestrator/stacks/${stackId}/logs?follow=true`, {
      headers: { authorization, ...headers },
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('error', () => undefined);
      const ended = new Promise<void>((done) => res.on('close', done));
      resolve({ res, ended, body: () => body, close: () => req.destroy() });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
