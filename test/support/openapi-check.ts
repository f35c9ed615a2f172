import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** The console's static files (src/server/console/console-static.ts), served outside the API. */
const CONSOLE = /^\/console(?:\/|$)/;

/**
 * Holds every answer of a test app to its OpenAPI document: the harness installs `middleware` in
 * front of the application (startApp's `middleware` option), which records each response's
 * method, path, status, media type and body; on `finish` the answer is checked against the
 * operation the document gives for that path and method: the status must be listed, the media type
 * among the listed ones, and a JSON body valid against that response's schema (ajv, JSON Schema
 * 2020-12). Violations pile up in `violations`; openapi-setup.ts fails the test they happened in.
 */
export interface OpenApiDocument {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, ResponseObject> };
}
interface Operation {
  operationId: string;
  responses: Record<string, ResponseObject | { $ref: string }>;
}
interface ResponseObject {
  description: string;
  content?: Record<string, { schema?: unknown }>;
}

/** Violations of every checked app of this test file, oldest first; openapi-setup.ts drains it. */
export const violations: string[] = [];

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);
const MAX_BODY = 8 * 1024 * 1024;
const COMPONENTS = 'openapi-components';

interface Template {
  path: string;
  pattern: RegExp;
  params: number;
}

export class OpenApiCheck {
  private readonly ajv: Ajv2020;
  private readonly templates: Template[];
  private readonly validators = new Map<string, ValidateFunction>();
  /** Responses checked, for the test that proves the check runs. */
  checked = 0;

  constructor(private readonly document: OpenApiDocument) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(this.ajv);
    this.ajv.addSchema({ $id: COMPONENTS, $defs: relink(document.components.schemas, '#/$defs/') });
    this.templates = Object.keys(document.paths)
      .map((path) => ({
        path,
        pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
        params: (path.match(/\{/g) ?? []).length,
      }))
      // A literal segment wins over a parameter: /workers/connectivity before /workers/{id}.
      .sort((a, b) => a.params - b.params);
  }

  /** Express middleware recording each answer; installed before everything else. */
  readonly middleware: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > MAX_BODY) return;
      const buffer = Buffer.isBuffer(chunk)
        ? chunk
        : typeof chunk === 'string'
          ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
          : Buffer.from(chunk as Uint8Array);
      size += buffer.length;
      chunks.push(buffer);
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    (res as { write: unknown }).write = (...args: unknown[]) => {
      keep(args[0], args[1]);
      return write(...args);
    };
    (res as { end: unknown }).end = (...args: unknown[]) => {
      keep(args[0], args[1]);
      return end(...args);
    };
    const method = req.method.toLowerCase();
    const path = req.originalUrl.split('?')[0] ?? '';
    res.on('finish', () => {
      const body = size > MAX_BODY ? undefined : Buffer.concat(chunks);
      const problem = this.check(method, path, res.statusCode, res.getHeader('content-type'), body);
      this.checked++;
      if (problem) violations.push(`${req.method} ${path} → ${res.statusCode}: ${problem}`);
    });
    next();
  };

  /** What is wrong with this answer, or undefined. */
  check(
    method: string,
    path: string,
    status: number,
    contentType: unknown,
    body: Buffer | undefined,
  ): string | undefined {
    // The web console's static files are pages for a browser, not API operations (docs/console.md);
    // its missing files answer the API's 404 problem, which is still checked.
    if (CONSOLE.test(path) && status !== 404) return undefined;
    const template = this.templates.find((t) => t.pattern.test(path));
    const item = template ? this.document.paths[template.path] : undefined;
    const operation = (item?.[method === 'head' && !item.head ? 'get' : method] ?? undefined) as
      Operation | undefined;
    if (!template || !operation || !METHODS.has(method)) {
      // No route: the application's 404 (or 405) problem, which no operation lists.
      if (status === 404 || status === 405) return this.problemBody(contentType, body);
      return 'no operation in the document for this method and path';
    }
    const listed = operation.responses[String(status)];
    if (!listed) return `status ${status} is not documented for ${operation.operationId}`;
    const response =
      '$ref' in listed ? this.document.components.responses[listed.$ref.split('/').pop() ?? ''] : listed;
    if (!response) return `${operation.operationId}: dangling response ${JSON.stringify(listed)}`;
    const type =
      typeof contentType === 'string' ? (contentType.split(';')[0]?.trim().toLowerCase() ?? '') : '';
    const empty = !body || body.length === 0;
    if (method === 'head' || status === 204 || status === 304)
      return empty || method === 'head' ? undefined : 'a body on a bodiless answer';
    const content = response.content ?? {};
    if (Object.keys(content).length === 0)
      return empty
        ? undefined
        : `${operation.operationId} ${status}: a body (${type}) where the document lists none`;
    const media = content[type];
    if (!media)
      return `${operation.operationId} ${status}: media type ${type || '(none)'} is not one of ${Object.keys(content).join(', ')}`;
    if (!isJson(type) || !media.schema) return undefined;
    if (!body) return undefined; // over the size cap
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      return `${operation.operationId} ${status}: the body is not JSON`;
    }
    return this.validate(`${operation.operationId} ${status} ${type}`, media.schema, value);
  }

  private problemBody(contentType: unknown, body: Buffer | undefined): string | undefined {
    if (typeof contentType !== 'string' || !contentType.startsWith('application/problem+json'))
      return `an unrouted answer that is not a problem (${String(contentType)})`;
    return this.validate(
      'Problem',
      { $ref: '#/components/schemas/Problem' },
      JSON.parse(body?.toString('utf8') ?? 'null'),
    );
  }

  private validate(key: string, schema: unknown, value: unknown): string | undefined {
    let validator = this.validators.get(key);
    if (!validator) {
      validator = this.ajv.compile(relink(schema, `${COMPONENTS}#/$defs/`) as object);
      this.validators.set(key, validator);
    }
    if (validator(value)) return undefined;
    const errors = (validator.errors ?? [])
      .slice(0, 5)
      .map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${e.params ? JSON.stringify(e.params) : ''}`);
    return `${key}: the body does not match the schema: ${errors.join('; ')}; body: ${JSON.stringify(value).slice(0, 600)}`;
  }
}

const isJson = (type: string) => type === 'application/json' || type.endsWith('+json');

/** The same schema with `#/components/schemas/X` references pointing at `<base>X`. */
function relink(schema: unknown, base: string): unknown {
  if (Array.isArray(schema)) return schema.map((item) => relink(item, base));
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      key === '$ref' && typeof value === 'string'
        ? value.replace('#/components/schemas/', base)
        : relink(value, base),
    ]),
  );
}
