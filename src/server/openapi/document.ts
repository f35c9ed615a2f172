import type { INestApplication, Type } from '@nestjs/common';
import { PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import {
  DocumentBuilder,
  SwaggerModule,
  type OpenAPIObject,
  type OperationObject,
  type ResponseObject,
  type ResponsesObject,
  type SecurityRequirementObject,
} from '@nestjs/swagger';
import { ACCEPTS_BASIC, PUBLIC_ROUTE, REQUIRED_SCOPES } from '../auth/auth.decorators.js';
import type { Scope } from '../auth/scopes.js';
import { CONSUMES } from '../common/media-type.js';
import { OAUTH_PATHS } from '../common/problem.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../common/version.js';
import { REASONS, problemContent } from './api-doc.js';
import { CONTRACT_SCHEMAS, contractRef } from './contract-schemas.js';
import { extraPaths } from './extra-paths.js';

/** Where the token endpoint is, relative to the server. */
export const TOKEN_URL = '/oauth/token';

const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'orchestrator:read': 'Read workers, stacks, jobs, drift, settings and the service info.',
  'orchestrator:write': 'Create, change, deploy and destroy stacks; cancel and clean up jobs; resolve drift.',
  'workers:admin': 'Join tokens; approve and delete workers; connectivity checks.',
  'tunnel:read': 'Read the tunnel status, registry URL, topology and subdomains.',
  'tunnel:write': 'Start and stop the tunnel, validate URLs, install commands.',
  'metrics:read': 'Query the metric store (Prometheus HTTP API).',
  'metrics:write': 'Write into the metric store (remote write, text import).',
  admin: 'Everything: implies every other scope; clients, keys, settings, audit and the debug bundle.',
};

/** The shared problems, referenced by every operation that may answer them. */
const PROBLEM_RESPONSES: Record<string, [number, string]> = {
  BadRequest: [400, 'The body is not valid JSON (`invalid_json`) or could not be read (`bad_request`).'],
  Unauthorized: [
    401,
    'No access token, or one that is not valid (`unauthorized`); `WWW-Authenticate` names the resource metadata.',
  ],
  Forbidden: [
    403,
    "The token lacks a scope this operation needs, or the record is another owner's (`forbidden`).",
  ],
  NotFound: [404, 'No such record (`not_found`).'],
  PayloadTooLarge: [413, 'The body is over 1 MiB (`payload_too_large`).'],
  UnsupportedMediaType: [
    415,
    "The body's Content-Type is not one this operation accepts (`unsupported_media_type`).",
  ],
  ValidationFailed: [422, 'Well-formed input that breaks the rules (`validation_failed`, with `errors[]`).'],
  RateLimited: [429, "The client's request rate limit is exceeded (`rate_limited`); see `Retry-After`."],
  Internal: [
    500,
    'A defect (`internal`); the detail is a fixed sentence, the error is logged under `request_id`.',
  ],
  Unavailable: [503, 'The database cannot be reached (`unavailable`); `Retry-After: 5`.'],
};
const byStatus = new Map(Object.entries(PROBLEM_RESPONSES).map(([name, [status]]) => [status, name]));

/** The groups operations are listed under, in this order. */
const TAGS: Record<string, string> = {
  Health: 'Probes for orchestrators (Kubernetes, systemd, load balancers).',
  Orchestrator: 'Health, information and the debug bundle of the service.',
  OAuth: 'The token endpoint and the documents OAuth clients discover.',
  Auth: 'Clients, signing keys and token validation.',
  Settings: 'Runtime settings (the log level).',
  Audit: 'The audit trail.',
  Workers: 'Join tokens, enrollment, approval and connectivity of workers.',
  Stacks: 'Stack definitions, revisions, deploys, health and logs.',
  Jobs: 'The jobs that deploy and destroy stacks.',
  Drift: 'Differences between the desired and the observed state.',
  Tunnel: 'The tunnel, its public URL and published subdomains.',
  Install: 'Installers and the agent download.',
  'Metric store': "The built-in metric store: Prometheus's HTTP API, remote write and text import.",
  Metrics: "The service's own metrics.",
  MCP: 'The Model Context Protocol endpoint.',
  Documentation: 'This document and its viewer.',
};

const DESCRIPTION = `The control plane's HTTP API: workers, stacks, jobs, drift, the tunnel, the built-in metric
store (Prometheus HTTP API) and MCP. Orchestrator and auth routes answer under \`/api/v1\` and \`/v1\`
alike; both are listed. Errors are RFC 9457 problems (\`application/problem+json\`), except at the
token endpoint (RFC 6749) and the Prometheus API (its own envelopes).

Authentication: an access token from \`POST /oauth/token\` (client credentials), sent as a Bearer token;
the metric store also takes HTTP Basic with a client id and secret. \`admin\` implies every scope.
Probes, \`/metrics\`, the orchestrator health, the token endpoint, the \`.well-known\` documents, the
installers and this document with its viewer (\`/docs\`) need no token. docs/api.md and docs/security.md
say more.`;

/**
 * The OpenAPI 3.1 document of the application's routes: @nestjs/swagger scans the controllers and
 * their @ApiDoc decorators; security, shared problems and media types are then read from the same
 * metadata the access guard and the media-type interceptor obey, so the document cannot disagree.
 * Works on a preview application (no provider instantiated, no database).
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle(SERVICE_NAME)
    .setVersion(SERVICE_VERSION)
    .setDescription(DESCRIPTION)
    .addServer('/', 'This service')
    .addOAuth2(
      {
        type: 'oauth2',
        description: 'Client credentials; the access token is then sent as a Bearer token.',
        flows: {
          clientCredentials: { tokenUrl: TOKEN_URL, refreshUrl: TOKEN_URL, scopes: SCOPE_DESCRIPTIONS },
        },
      },
      'oauth2',
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'An access token from /oauth/token.',
      },
      'bearer',
    )
    .addBasicAuth(
      { type: 'http', scheme: 'basic', description: "Client id and secret; the metric store's routes only." },
      'basic',
    )
    .build();
  const routes = new Map<string, Route>();
  const document = SwaggerModule.createDocument(app, config, {
    operationIdFactory: (controller, method) => operationId(controller, method),
    autoTagControllers: false,
  });
  for (const controller of controllers(app))
    for (const route of controllerRoutes(controller))
      routes.set(operationId(controller.name, route.method), route);
  const undocumented: string[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const key = operation.operationId?.replace(/\[\d+\]$/, '') ?? '';
      const route = routes.get(key);
      if (!route) throw new Error(`no route behind operation ${operation.operationId}`);
      operation.operationId = path.startsWith('/v1/') ? `${key}_v1` : key;
      if (!operation.summary) undocumented.push(`${method.toUpperCase()} ${path}`);
      finishOperation(operation, route, path);
    }
  }
  if (undocumented.length) throw new Error(`routes without @ApiDoc: ${undocumented.join(', ')}`);
  const untagged = Object.values(document.paths)
    .flatMap((item) => METHODS.map((method) => item[method]))
    .flatMap((operation) => operation?.tags ?? [])
    .filter((tag) => !Object.hasOwn(TAGS, tag));
  if (untagged.length) throw new Error(`tags missing from TAGS: ${[...new Set(untagged)].join(', ')}`);
  document.tags = Object.entries(TAGS).map(([name, description]) => ({ name, description }));
  Object.assign(document.paths, extraPaths());
  document.components = {
    ...document.components,
    schemas: { ...CONTRACT_SCHEMAS },
    responses: Object.fromEntries(
      Object.entries(PROBLEM_RESPONSES).map(([name, [, description]]) => [
        name,
        { description, content: problemContent() } satisfies ResponseObject,
      ]),
    ),
  };
  return sortDocument(document);
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** What the guard and the interceptor read for one handler. */
interface Route {
  method: string;
  public: boolean;
  scopes: Scope[] | undefined;
  basic: boolean;
  consumes: string[];
  /** A @Body() or @Query() whose class the validation pipe checks (422 on bad input). */
  validated: { body: boolean; query: boolean };
}

const operationId = (controller: string, method: string): string =>
  `${controller.replace(/Controller$/, '').replace(/^./, (c) => c.toLowerCase())}_${method}`;

function controllers(app: INestApplication): Type[] {
  const container = (
    app as unknown as {
      container: { getModules(): Map<string, { controllers: Map<unknown, { metatype: Type }> }> };
    }
  ).container;
  const found = new Set<Type>();
  for (const module of container.getModules().values())
    for (const wrapper of module.controllers.values()) found.add(wrapper.metatype);
  return [...found];
}

function controllerRoutes(controller: Type): Route[] {
  const routes: Route[] = [];
  const prototype = controller.prototype as Record<string, unknown>;
  const names = new Set<string>();
  for (
    let p: object | null = prototype;
    p && p !== Object.prototype;
    p = Object.getPrototypeOf(p) as object | null
  )
    for (const name of Object.getOwnPropertyNames(p)) if (name !== 'constructor') names.add(name);
  for (const name of names) {
    const handler = prototype[name];
    if (typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
    const read = <T>(key: string): T | undefined =>
      (Reflect.getMetadata(key, handler) as T | undefined) ??
      (Reflect.getMetadata(key, controller) as T | undefined);
    routes.push({
      method: name,
      public: read<boolean>(PUBLIC_ROUTE) === true,
      scopes: read<Scope[]>(REQUIRED_SCOPES),
      basic: read<boolean>(ACCEPTS_BASIC) === true,
      consumes: read<string[]>(CONSUMES) ?? ['application/json'],
      validated: validatedArguments(controller, name),
    });
  }
  return routes;
}

function validatedArguments(controller: Type, name: string): Route['validated'] {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) ?? {}) as Record<
    string,
    { index: number }
  >;
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype as object, name) ??
    []) as unknown[];
  const validated = (kind: RouteParamtypes) =>
    Object.entries(args).some(([key, arg]) => {
      const type = types[arg.index];
      return key.startsWith(`${kind}:`) && typeof type === 'function' && type !== Object && type !== String;
    });
  return { body: validated(RouteParamtypes.BODY), query: validated(RouteParamtypes.QUERY) };
}

/** Security from the route's scopes; the problems every route of its kind shares. */
function finishOperation(operation: OperationObject, route: Route, path: string): void {
  const responses: ResponsesObject = operation.responses;
  delete responses.default;
  const shared = new Set<number>([500]);
  if (route.public) {
    operation.security = [];
    const open = 'No access token needed.';
    operation.description = operation.description ? `${open}\n\n${operation.description}` : open;
  } else if (route.scopes) {
    const scopes = route.scopes;
    operation.security = [
      { oauth2: scopes },
      { bearer: scopes },
      ...(route.basic ? [{ basic: scopes }] : []),
    ] satisfies SecurityRequirementObject[];
    const needs = scopes.length
      ? `Scope: ${scopes.map((s) => `\`${s}\``).join(', ')} (or \`admin\`).`
      : 'Any valid access token.';
    operation.description = operation.description ? `${needs}\n\n${operation.description}` : needs;
    [401, 403, 429, 503].forEach((status) => shared.add(status));
  }
  if (operation.requestBody && 'content' in operation.requestBody) {
    const [schema] = Object.values(operation.requestBody.content).map((media) => media.schema);
    operation.requestBody.content = Object.fromEntries(route.consumes.map((type) => [type, { schema }]));
    [400, 413, 415].forEach((status) => shared.add(status));
  }
  if (route.validated.body || route.validated.query) shared.add(422);
  const parameters = operation.parameters ?? [];
  // A path parameter names a record under the API prefixes; elsewhere the route says what it answers.
  const resource = path.startsWith('/api/v1/') || path.startsWith('/v1/');
  if (resource && parameters.some((p) => 'in' in p && p.in === 'path')) shared.add(404);
  // The token and revocation endpoints answer every error as an RFC 6749 body (common/problem.ts).
  const oauth = OAUTH_PATHS.includes(path);
  for (const status of shared) {
    const name = byStatus.get(status);
    if (!name || responses[status]) continue;
    responses[status] = oauth
      ? {
          description: `${PROBLEM_RESPONSES[name][1]} As an RFC 6749 error body.`,
          content: { 'application/json': { schema: contractRef('OAuthError') } },
        }
      : { $ref: `#/components/responses/${name}` };
  }
  for (const [status, response] of Object.entries(responses))
    if (response && 'description' in response && !response.description)
      response.description = REASONS[Number(status)] ?? status;
}

const OPERATION_KEYS = [
  'operationId',
  'summary',
  'description',
  'tags',
  'security',
  'parameters',
  'requestBody',
  'responses',
];

/** An operation's fields in reading order, its responses by status. */
function sortOperation(operation: OperationObject): OperationObject {
  const rank = (key: string) =>
    OPERATION_KEYS.includes(key) ? OPERATION_KEYS.indexOf(key) : OPERATION_KEYS.length;
  const sorted = Object.fromEntries(
    Object.entries(operation).sort(([a], [b]) => rank(a) - rank(b)),
  ) as unknown as OperationObject;
  sorted.responses = Object.fromEntries(
    Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b)),
  );
  return sorted;
}

/** Paths, then methods, in a stable order, so the committed document diffs well. */
function sortDocument(document: OpenAPIObject): OpenAPIObject {
  const paths = Object.fromEntries(
    Object.entries(document.paths)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([path, item]) => [
        path,
        Object.fromEntries(
          Object.entries(item).map(([method, operation]) => [
            method,
            METHODS.includes(method as (typeof METHODS)[number])
              ? sortOperation(operation as OperationObject)
              : operation,
          ]),
        ),
      ]),
  );
  const components = document.components ?? {};
  return {
    ...document,
    paths,
    components: {
      ...components,
      schemas: Object.fromEntries(
        Object.entries(components.schemas ?? {}).sort(([a], [b]) => a.localeCompare(b)),
      ),
    },
  };
}
