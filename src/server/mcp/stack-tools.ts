import * as z from 'zod/v4';
import { AppError } from '../common/app-error.js';
import { MAX_BODY_BYTES } from '../common/body-parsers.js';
import { DriftService } from '../drift/drift.service.js';
import { StackLogsService } from '../stack-monitoring/stack-logs.service.js';
import { DNS_LABEL } from '../stacks/definition/service-fields.js';
import { StacksService } from '../stacks/stacks.service.js';
import { pageArgs } from './schemas/common.js';
import * as drift from './schemas/drift.js';
import { jobView } from './schemas/jobs.js';
import { definitionOptions, toolDefinitionRequest } from './schemas/definitions.js';
import * as out from './schemas/stacks.js';
import { defineTool, READ_ONLY, type McpTool } from './tool.js';

/** A stack id; the HTTP path takes any string and answers 404 for one that is not a stack's. */
const stackId = z.string().min(1).max(64).describe('The stack id (a UUID), as list_stacks answers it');

/** The YAML definition, bounded like the HTTP body that carries it (checked in bytes, as there). */
const definition = z
  .string()
  .describe(
    `The whole stack definition file as YAML text (docs/stack-definitions.md), at most ${MAX_BODY_BYTES} bytes of UTF-8`,
  );

/** The HTTP body limit's problem (413), for a definition that would not fit in an HTTP body either. */
export function definitionSource(text: string): string {
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES)
    throw new AppError(
      413,
      'payload_too_large',
      'Payload Too Large',
      `The definition exceeds the limit of ${MAX_BODY_BYTES} bytes.`,
    );
  return text;
}

/** DriftResourcesDto's bounds: 1 to 200 service names, each a DNS label. */
const resources = z
  .array(
    z
      .string()
      .min(1)
      .max(63)
      .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'each resource is a service name (a DNS label)'),
  )
  .min(1)
  .max(200)
  .describe('Service names of the stack (drift items name their service as resource)');

/** Lines a get_stack_logs answer holds at most: a model reads them, and HTTP serves more. */
export const MCP_MAX_LOG_LINES = 1_000;

/** StackLogsDto's filters (`follow` left out: a tool answers once); log-query.ts reads the times. */
const stackLogArgs = {
  id: stackId,
  service: z
    .string()
    .max(63)
    .regex(DNS_LABEL, 'service must be a service name (a DNS label)')
    .optional()
    .describe("Only this service's lines"),
  since: z
    .string()
    .max(64)
    .optional()
    .describe(
      'Lines at or after it: an RFC 3339 time (2026-11-01T10:00:00Z) or a duration back from now (15m, 2h, 7d)',
    ),
  until: z.string().max(64).optional().describe('Lines before it, same forms as since'),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MCP_MAX_LOG_LINES)
    .optional()
    .describe(`The newest that many matching lines, 1 to ${MCP_MAX_LOG_LINES} (default 100)`),
};

/** Writes a record of this instance only: no running service changes. */
const RECORDS = { readOnlyHint: false, destructiveHint: false, openWorldHint: false };
/**
 * Changes what runs on the stack's worker. Destructive: the agent stops, replaces and removes
 * services to match. Idempotent: calling again converges on the same state (while a job of the
 * stack is under way, another is refused with 409). Closed world: this instance's own workers.
 */
const CHANGES_NODE = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: false,
};

/** The stack and drift tools: each calls the service method its HTTP route calls, with that route's scope. */
export function stackTools(
  stacks: StacksService,
  drifts: DriftService,
  stackLogs: StackLogsService,
): McpTool[] {
  return [
    defineTool({
      name: 'list_stacks',
      title: 'List stacks',
      description:
        "The caller's stacks, oldest first, one page at a time: status (draft, deploying, deployed, failed, destroying), current and deployed revision, worker, services.",
      scope: 'orchestrator:read',
      input: pageArgs,
      output: out.stackList,
      annotations: READ_ONLY,
      run: async (args, caller) => {
        const page = await stacks.list(caller, args);
        return { stacks: page.items, next_cursor: page.next_cursor };
      },
    }),
    defineTool({
      name: 'get_stack',
      title: 'Get a stack',
      description:
        'One stack: status, current revision (the latest definition) and deployed revision (what runs), its worker and services. The YAML itself is the resource stack://{id}/definition.',
      scope: 'orchestrator:read',
      input: { id: stackId },
      output: out.stackView,
      annotations: READ_ONLY,
      run: ({ id }, caller) => stacks.get(caller, id),
    }),
    defineTool({
      name: 'list_stack_revisions',
      title: 'List stack revisions',
      description:
        'Every revision of a stack, oldest first, with who wrote it and which one is current and which one is deployed.',
      scope: 'orchestrator:read',
      input: { id: stackId },
      output: out.stackRevisionList,
      annotations: READ_ONLY,
      run: ({ id }, caller) => stacks.revisions(caller, id),
    }),
    defineTool({
      name: 'get_stack_health',
      title: 'Stack health',
      description:
        "Health of a stack's services from its worker's latest state report: overall (healthy, degraded, unhealthy, unknown) and per service status, uptime and last health check.",
      scope: 'orchestrator:read',
      input: { id: stackId },
      output: out.stackHealth,
      annotations: READ_ONLY,
      run: ({ id }, caller) => stacks.health(caller, id),
    }),
    defineTool({
      name: 'get_stack_logs',
      title: 'Stack logs',
      description:
        "What a stack's services wrote on stdout and stderr (process driver), as the agent shipped it: the newest limit matching lines, oldest first, each with its time, service, worker and stream; truncated says older ones matched too (read them with until set to the first line's time). To follow new lines, use HTTP (GET .../stacks/{id}/logs?follow=true) or stackctl stacks logs --follow.",
      scope: 'orchestrator:read',
      input: stackLogArgs,
      output: out.stackLogPage,
      annotations: READ_ONLY,
      run: ({ id, ...filters }, caller) => stackLogs.read(caller, id, filters),
    }),
    defineTool({
      name: 'create_stack',
      title: 'Create a stack',
      description:
        "Stores a new stack from its YAML definition as revision 1, in status draft; nothing runs until deploy_stack. An invalid file is refused with the validator's errors (400 invalid_yaml, 422 validation_failed); a name in use is 409.",
      scope: 'orchestrator:write',
      input: { definition, ...definitionOptions },
      output: out.stackView,
      annotations: { ...RECORDS, idempotentHint: false },
      run: (args, caller) =>
        stacks.create(
          caller,
          toolDefinitionRequest({ ...args, definition: definitionSource(args.definition) }),
        ),
    }),
    defineTool({
      name: 'update_stack',
      title: 'Update a stack',
      description:
        'Stores a new revision of a stack from its whole YAML definition (the name must stay the same). What runs does not change until deploy_stack.',
      scope: 'orchestrator:write',
      input: { id: stackId, definition, ...definitionOptions },
      output: out.stackView,
      annotations: { ...RECORDS, idempotentHint: false },
      run: ({ id, ...args }, caller) =>
        stacks.replace(
          caller,
          id,
          toolDefinitionRequest({ ...args, definition: definitionSource(args.definition) }),
        ),
    }),
    defineTool({
      name: 'deploy_stack',
      title: 'Deploy a stack',
      description:
        "Queues a provision job that applies the stack's current revision on a worker (placed by resources and labels on first deploy) and answers the job, status queued. The agent creates, replaces and removes services to match; services under a drift ignore rule are kept as they are. Follow it with get_job until succeeded or failed; 409 while another job of the stack is under way.",
      scope: 'orchestrator:write',
      input: { id: stackId },
      output: jobView,
      annotations: CHANGES_NODE,
      run: ({ id }, caller) => stacks.deploy(caller, id),
    }),
    defineTool({
      name: 'destroy_stack',
      title: 'Destroy a stack',
      description:
        'Queues a destroy job that stops and removes every service of the stack on its worker and answers the job; when it succeeds the stack and its revisions are gone. Its volumes stay on the worker unless delete_volumes is true. A stack never placed is gone at once (the job answers succeeded).',
      scope: 'orchestrator:write',
      input: {
        id: stackId,
        delete_volumes: z
          .boolean()
          .optional()
          .describe("true: remove the stack's volumes and their data too; by default they are kept"),
      },
      output: jobView,
      annotations: CHANGES_NODE,
      run: ({ id, delete_volumes }, caller) =>
        stacks.delete(caller, id, delete_volumes ? { volumes: 'delete' } : {}),
    }),
    defineTool({
      name: 'get_stack_drift',
      title: 'Stack drift',
      description:
        "Differences between the stack's current revision and what its worker runs: status (in_sync, drifted, unknown) and items (missing, modified, unexpected) with desired and actual values, and the ignore rules.",
      scope: 'orchestrator:read',
      input: { id: stackId },
      output: drift.driftView,
      annotations: READ_ONLY,
      run: ({ id }, caller) => drifts.get(caller, id),
    }),
    defineTool({
      name: 'ignore_stack_drift',
      title: 'Ignore drift',
      description:
        'Adds ignore rules for services of the stack: their drift stays visible but leaves the status, and deploys and resolves keep them as they are on the node. Names that are neither services nor drifted resources are refused (422). Answers the drift.',
      scope: 'orchestrator:write',
      input: { id: stackId, resources },
      output: drift.driftView,
      annotations: { ...RECORDS, idempotentHint: true },
      run: ({ id, resources }, caller) => drifts.ignore(caller, id, resources),
    }),
    defineTool({
      name: 'unignore_stack_drift',
      title: 'Stop ignoring drift',
      description: 'Removes ignore rules for services of the stack; answers the drift.',
      scope: 'orchestrator:write',
      input: { id: stackId, resources },
      output: drift.driftView,
      annotations: { ...RECORDS, idempotentHint: true },
      run: ({ id, resources }, caller) => drifts.unignore(caller, id, resources),
    }),
    defineTool({
      name: 'resolve_stack_drift',
      title: 'Resolve drift',
      description:
        'Queues a provision job that re-applies the current revision: missing services are created or started, unexpected ones removed, modified ones replaced (ignored services are kept), and answers the job; 409 when nothing unignored drifted. Follow it with get_job.',
      scope: 'orchestrator:write',
      input: { id: stackId },
      output: drift.driftResolve,
      annotations: CHANGES_NODE,
      run: ({ id }, caller) => drifts.resolve(caller, id),
    }),
  ];
}
