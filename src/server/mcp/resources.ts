import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '@nestjs/common';
import { insufficientScope } from '../auth/auth.errors.js';
import { hasScope } from '../auth/scopes.js';
import { MAX_PAGE_SIZE } from '../common/pagination.js';
import type { Caller } from '../common/request-context.js';
import type { JobLogLine } from '../../contracts/api/jobs.js';
import { JobsService } from '../jobs/jobs.service.js';
import { StacksService } from '../stacks/stacks.service.js';
import { problemOf } from './tool.js';

/** MCP's code for a resource that does not exist (specification, server/resources, error handling). */
export const RESOURCE_NOT_FOUND = -32002;

/** The scope of the HTTP routes the resources and prompts read through (GET stacks, drift, jobs). */
export const SCOPE = 'orchestrator:read';

/** How many of the caller's newest jobs resources/list names. */
const LISTED_JOBS = 50;

/** A page of log lines as large as GET .../logs allows. */
const LOG_PAGE = 5000;

export interface ResourceServices {
  stacks: StacksService;
  jobs: JobsService;
}

/**
 * A failure as a JSON-RPC error (resources and prompts have no error result like tools do): the
 * problem goes in `data`; a 404 carries `notFound` (the resource-not-found code for resources), any
 * other coded refusal InvalidParams, and anything else InternalError without detail from inside.
 */
export function protocolError(log: Logger, name: string, err: unknown, notFound: number): McpError {
  const problem = problemOf(log, name, err);
  const code =
    problem.status === 404
      ? notFound
      : problem.status < 500
        ? ErrorCode.InvalidParams
        : ErrorCode.InternalError;
  return new McpError(code, problem.detail, problem);
}

/**
 * Runs a read for this caller, who needs SCOPE, answering failures as protocol errors (a 404 with
 * `notFound`); the resources and the prompts read through it.
 */
export async function readFor<T>(
  log: Logger,
  name: string,
  caller: Caller,
  notFound: number,
  read: () => Promise<T>,
): Promise<T> {
  try {
    if (!hasScope(caller.scopes, SCOPE)) throw insufficientScope([SCOPE]);
    return await read();
  } catch (err) {
    throw protocolError(log, name, err, notFound);
  }
}

const variable = (value: string | string[] | undefined): string =>
  (Array.isArray(value) ? value[0] : value) ?? '';

/**
 * The stack definitions and job logs as MCP resources, registered on a per-request server for its
 * caller: listed only to a token with orchestrator:read (an empty list otherwise), read through
 * the same service methods as the HTTP routes, so another owner's id is not found.
 */
export function serveResources(
  server: McpServer,
  caller: Caller,
  services: ResourceServices,
  log: Logger,
): void {
  const { stacks, jobs } = services;
  const allowed = hasScope(caller.scopes, SCOPE);

  server.registerResource(
    'stack_definition',
    new ResourceTemplate('stack://{id}/definition', {
      list: async () => {
        if (!allowed) return { resources: [] };
        // One page, as large as GET .../stacks gives (oldest first); list_stacks pages past it.
        const page = await stacks.list(caller, { limit: MAX_PAGE_SIZE });
        return {
          resources: page.items.map((stack) => ({
            uri: `stack://${stack.id}/definition`,
            name: `${stack.name} definition`,
            description: `Revision ${stack.revision} of stack ${stack.name} (${stack.status})`,
          })),
        };
      },
    }),
    {
      title: 'Stack definition',
      description: "A stack's current (latest) definition, the YAML file as it was submitted.",
      mimeType: 'application/yaml',
    },
    (uri, { id }) =>
      readFor(log, 'resource stack_definition', caller, RESOURCE_NOT_FOUND, async () => {
        const stack = await stacks.get(caller, variable(id));
        const revision = await stacks.revision(caller, stack.id, stack.revision);
        return { contents: [{ uri: uri.href, mimeType: 'application/yaml', text: revision.source }] };
      }),
  );

  server.registerResource(
    'job_logs',
    new ResourceTemplate('job://{id}/logs', {
      list: async () => {
        if (!allowed) return { resources: [] };
        const page = await jobs.list(caller, { limit: LISTED_JOBS });
        return {
          resources: page.items.map((job) => ({
            uri: `job://${job.id}/logs`,
            name: `${job.stack_name} ${job.type} logs`,
            description: `The ${job.type} job of stack ${job.stack_name} created at ${job.created_at} (${job.status})`,
          })),
        };
      },
    }),
    {
      title: 'Job logs',
      description:
        "A job's output lines from its agent, oldest first, each after its time; what is there so far for a job under way.",
      mimeType: 'text/plain',
    },
    (uri, { id }) =>
      readFor(log, 'resource job_logs', caller, RESOURCE_NOT_FOUND, async () => {
        const lines = await allLogLines(jobs, caller, variable(id));
        const text = lines.map((l) => `${l.time} ${l.line}\n`).join('');
        return { contents: [{ uri: uri.href, mimeType: 'text/plain', text }] };
      }),
  );
}

/**
 * Every line of a job's log so far. The agent's lines are capped per job (5000 and a truncation
 * note), so this takes a page or two; the page bound keeps it so if that cap ever grows.
 */
export async function allLogLines(jobs: JobsService, caller: Caller, id: string): Promise<JobLogLine[]> {
  const lines: JobLogLine[] = [];
  let after = 0;
  for (let page = 0; page < 4; page++) {
    const next = await jobs.logs(caller, id, after, LOG_PAGE);
    lines.push(...next.lines);
    if (next.lines.length < LOG_PAGE) break;
    after = next.next_after;
  }
  return lines;
}
