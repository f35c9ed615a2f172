import { applyDecorators } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiQuery, ApiResponse, ApiTags, type ContentObject } from '@nestjs/swagger';
import { CONTRACT_SCHEMAS, type ContractName, type JsonSchema, contractRef } from './contract-schemas.js';

/** A response: a contract sent as JSON, no body (`null`), or any content spelled out. */
export type Answer = ContractName | null | { description?: string; content: ContentObject };

export interface ApiDocOptions {
  summary: string;
  description?: string;
  /** The group the operation is listed under. */
  tag: string;
  /**
   * The request body: a contract, or a schema for every media type the route accepts (`@Consumes`,
   * application/json by default; the document lists them from that metadata).
   */
  body?: ContractName | JsonSchema;
  /** A `...Query` contract: each of its fields becomes a query parameter. */
  query?: ContractName;
  /** Successful (and other non-problem) answers by status. */
  responses: Record<number, Answer>;
  /**
   * The problems this operation answers besides the ones every route shares (the document adds
   * 401/403/429 from the route's scopes, 400/413/415/422 for a body, 422 for a query, 500, 503).
   */
  problems?: Record<number, string>;
}

/** HTTP's reason phrases for the statuses this API answers, as the default descriptions. */
export const REASONS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The media type of every problem (RFC 9457). */
export const PROBLEM_TYPE = 'application/problem+json';

/** A contract sent as JSON, with its own description (where the status alone says too little). */
export const jsonAnswer = (name: ContractName, description: string): Answer => ({
  description,
  content: { 'application/json': { schema: contractRef(name) } },
});

export const problemContent = (): ContentObject => ({ [PROBLEM_TYPE]: { schema: contractRef('Problem') } });

/**
 * Documents one route for the OpenAPI document with @nestjs/swagger's decorators. Shapes are named
 * by their contract (src/contracts/api), so a misspelt one does not compile; scopes, security and
 * accepted media types are read from the route's own metadata when the document is built.
 */
export function ApiDoc(options: ApiDocOptions): MethodDecorator {
  const decorators: (MethodDecorator | ClassDecorator)[] = [
    ApiOperation({
      summary: options.summary,
      ...(options.description ? { description: options.description } : {}),
    }),
  ];
  decorators.push(ApiTags(options.tag));
  if (options.body !== undefined) {
    const schema = typeof options.body === 'string' ? contractRef(options.body) : options.body;
    decorators.push(ApiBody({ schema, required: true }));
  }
  if (options.query) {
    const query = CONTRACT_SCHEMAS[options.query];
    const required = new Set(query.required ?? []);
    for (const [name, property] of Object.entries(query.properties ?? {})) {
      const { description, ...schema } = property;
      decorators.push(
        ApiQuery({
          name,
          required: required.has(name),
          schema,
          ...(description ? { description } : {}),
        }),
      );
    }
  }
  for (const [status, answer] of Object.entries(options.responses)) {
    const code = Number(status);
    const description = REASONS[code] ?? status;
    if (answer === null) decorators.push(ApiResponse({ status: code, description }));
    else if (typeof answer === 'string')
      decorators.push(
        ApiResponse({
          status: code,
          description,
          content: { 'application/json': { schema: contractRef(answer) } },
        }),
      );
    else
      decorators.push(
        ApiResponse({
          status: code,
          description: answer.description ?? description,
          content: answer.content,
        }),
      );
  }
  for (const [status, description] of Object.entries(options.problems ?? {}))
    decorators.push(ApiResponse({ status: Number(status), description, content: problemContent() }));
  return applyDecorators(...decorators);
}
