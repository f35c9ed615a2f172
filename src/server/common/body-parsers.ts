import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { sendProblem } from './problem.js';

/** The largest request body the service reads. */
export const MAX_BODY_BYTES = 1024 * 1024;

export const JSON_TYPES = ['application/json', 'application/*+json'];
export const FORM_TYPES = ['application/x-www-form-urlencoded'];
export const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];
/** Bodies kept as bytes (a Buffer): the metric store's remote write and text import. */
export const RAW_TYPES = ['application/x-protobuf', 'text/plain', 'application/openmetrics-text'];

interface ParserError {
  type?: string;
  status?: number;
}

/** Deeper JSON than this is refused: validation walks bodies recursively and would overflow. */
export const MAX_JSON_DEPTH = 32;

/** Scans raw JSON for nesting deeper than MAX_JSON_DEPTH, skipping string contents. */
export function jsonTooDeep(buf: Buffer): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

const refuseDeepJson = (_req: unknown, _res: unknown, buf: Buffer): void => {
  if (jsonTooDeep(buf)) throw Object.assign(new Error('too deep'), { status: 400, type: 'entity.too.deep' });
};

/** Runs a body-parser and answers its failures as problems instead of letting them escape. */
function guarded(parser: RequestHandler): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    void parser(req, res, (err?: unknown) => {
      if (!err) return next();
      const e = err as ParserError;
      if (e.type === 'entity.too.large' || e.type === 'parameters.too.many') {
        return sendProblem(req, res, {
          status: 413,
          code: 'payload_too_large',
          detail: `The request body exceeds the limit of ${MAX_BODY_BYTES} bytes.`,
        });
      }
      if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') {
        return sendProblem(req, res, {
          status: 415,
          code: 'unsupported_media_type',
          detail: 'The request body uses an unsupported content encoding or charset.',
        });
      }
      if (e.type === 'entity.too.deep') {
        return sendProblem(req, res, {
          status: 400,
          code: 'invalid_json',
          detail: `The request body nests deeper than ${MAX_JSON_DEPTH} levels.`,
        });
      }
      if (e.type === 'entity.parse.failed') {
        return sendProblem(req, res, {
          status: 400,
          code: 'invalid_json',
          detail: 'The request body is not valid JSON.',
        });
      }
      return sendProblem(req, res, {
        status: 400,
        code: 'bad_request',
        detail: 'The request body could not be read.',
      });
    });
  };
}

/**
 * The service's body parsing as one middleware: JSON, form-encoded (OAuth clients), YAML as text and
 * the metric store's protobuf and text as bytes,
 * all bounded by MAX_BODY_BYTES. A request without a body costs one header check; a declared
 * oversize body is refused before a byte is read. Other media types are left unread; the media-type
 * interceptor refuses them.
 */
export function bodyParser(budgetBytes = Infinity): RequestHandler {
  const budget = new BodyBudget(budgetBytes);
  const json = guarded(
    express.json({ limit: MAX_BODY_BYTES, type: JSON_TYPES, strict: false, verify: refuseDeepJson }),
  );
  const form = guarded(
    express.urlencoded({ limit: MAX_BODY_BYTES, type: FORM_TYPES, extended: false, parameterLimit: 100 }),
  );
  const yaml = guarded(express.text({ limit: MAX_BODY_BYTES, type: YAML_TYPES }));
  const raw = guarded(express.raw({ limit: MAX_BODY_BYTES, type: RAW_TYPES }));
  return (req: Request, res: Response, next: NextFunction) => {
    const declared = req.headers['content-length'];
    if (declared === undefined && req.headers['transfer-encoding'] === undefined) return next();
    if (Number(declared ?? 0) > MAX_BODY_BYTES) {
      return sendProblem(req, res, {
        status: 413,
        code: 'payload_too_large',
        detail: `The request body exceeds the limit of ${MAX_BODY_BYTES} bytes.`,
        headers: { Connection: 'close' },
      });
    }
    // What this body may take while it is read and handled: its declared size, or the limit when
    // its size is not known in advance (chunked) or it inflates (a content encoding).
    const cost =
      declared !== undefined && req.headers['content-encoding'] === undefined
        ? Number(declared) || 0
        : MAX_BODY_BYTES;
    if (!budget.take(cost)) {
      return sendProblem(req, res, {
        status: 503,
        code: 'overloaded',
        title: 'Service Unavailable',
        detail: 'The service is reading as many request bodies as it may at once; try again shortly.',
        headers: { 'Retry-After': '1', Connection: 'close' },
      });
    }
    res.once('close', () => budget.give(cost));
    // Each parser only reads bodies of its own media types and passes the rest on.
    // Remote write declares its snappy block compression as a content encoding, which the body
    // reader cannot undo: the remote-write decoder does (remote-write.ts).
    if (
      req.headers['content-encoding'] === 'snappy' &&
      req.headers['content-type'] === 'application/x-protobuf'
    )
      delete req.headers['content-encoding'];
    json(req, res, () => form(req, res, () => yaml(req, res, () => raw(req, res, next))));
  };
}

/**
 * The request bytes one process may hold for bodies being read or handled (HTTP_BODY_BUDGET): the
 * body limit bounds one request, this bounds them all, whatever the number of connections sending
 * bodies slowly. Taken before a byte is read, given back when the response ends.
 */
class BodyBudget {
  private used = 0;

  constructor(private readonly bytes: number) {}

  take(cost: number): boolean {
    if (cost > 0 && this.used + cost > this.bytes) return false;
    this.used += cost;
    return true;
  }

  give(cost: number): void {
    this.used -= cost;
  }
}
