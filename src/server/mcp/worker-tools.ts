import * as z from 'zod/v4';
import { ConnectivityService } from '../workers/connectivity.service.js';
import { WORKER_STATES } from '../workers/worker-state.js';
import { WorkersService } from '../workers/workers.service.js';
import { pageArgs } from './schemas/common.js';
import * as out from './schemas/workers.js';
import { defineTool, READ_ONLY, type McpTool } from './tool.js';

/** Path parameters have no DTO: any other string is simply not a worker (404), as over HTTP. */
const workerId = {
  id: z.string().min(1).max(64).describe('The worker id (a UUID): the id field of list_workers'),
};

/** What delete_worker answers where the HTTP route answers 204 with no body. */
const deletion = (id: string): { id: string; deleted: true } => ({ id, deleted: true });

/**
 * The worker tools: each calls the method its `.../orchestrator/workers` route calls, with that
 * route's scope and the caller's owner (another owner's worker is not found, as over HTTP).
 */
export function workerTools(workers: WorkersService, connectivity: ConnectivityService): McpTool[] {
  return [
    defineTool({
      name: 'list_workers',
      title: 'List workers',
      description:
        "The caller's worker nodes, newest first: id, name, status, whether connected, last heartbeat, CPU/memory/disk figures, labels. Filter by status (pending ones await approve_worker); page with limit and next_cursor.",
      scope: 'orchestrator:read',
      input: {
        // The same values and message as ListWorkersDto.
        status: z
          .enum(WORKER_STATES, { error: `status must be one of ${WORKER_STATES.join(', ')}` })
          .optional()
          .describe('Only workers in this state'),
        ...pageArgs,
      },
      output: out.workerList,
      annotations: READ_ONLY,
      run: async (query, caller) => {
        const page = await workers.list(caller, query);
        return { workers: page.items, next_cursor: page.next_cursor };
      },
    }),
    defineTool({
      name: 'get_worker',
      title: 'Get a worker',
      description:
        'One worker by id: status, connection, last heartbeat and metrics, host facts (hostname, address, OS, architecture, driver, agent version), labels, when approved.',
      scope: 'orchestrator:read',
      input: workerId,
      output: out.worker,
      annotations: READ_ONLY,
      run: ({ id }, caller) => workers.get(caller, id),
    }),
    defineTool({
      name: 'approve_worker',
      title: 'Approve a worker',
      description:
        'Approves a pending worker (status pending in list_workers): the service issues its certificate, the agent connects and turns healthy within a few heartbeats. Answers the worker; a worker that is not pending is a 409 conflict and nothing changes.',
      scope: 'workers:admin',
      input: workerId,
      output: out.worker,
      // A repeat changes nothing (409); the agent fetches its certificate itself.
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      run: ({ id }, caller) => workers.approve(caller, id),
    }),
    defineTool({
      name: 'delete_worker',
      title: 'Delete a worker',
      description:
        'Removes a worker: its certificates are revoked and its agent is disconnected at once; stacks placed on it are left without a worker (worker_id null). The agent must enroll again (as pending) to come back. Answers {id, deleted: true}; an unknown id is a 404.',
      scope: 'workers:admin',
      input: workerId,
      output: out.deleted,
      // Destructive; a repeat finds nothing more to remove (404).
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      run: async ({ id }, caller) => {
        await workers.delete(caller, id);
        return deletion(id);
      },
    }),
    defineTool({
      name: 'get_worker_connectivity',
      title: 'Worker connectivity',
      description:
        "The latest probe result between each pair of the caller's connected workers: from, to, reachable, round-trip time, when checked. Probes run on a schedule; check_worker_connectivity asks for a round now.",
      scope: 'orchestrator:read',
      input: {},
      output: out.connectivity,
      annotations: READ_ONLY,
      run: (_args, caller) => connectivity.matrix(caller),
    }),
    defineTool({
      name: 'check_worker_connectivity',
      title: 'Check worker connectivity',
      description:
        "Asks the caller's connected agents to probe each other now and answers at once with the round's probe_id and how many agents were asked; results arrive within seconds in get_worker_connectivity.",
      scope: 'workers:admin',
      input: {},
      output: out.connectivityCheck,
      // Agents open connections to their peers' addresses, which may be any host: the open world.
      // Each call is a new round of probes, so not idempotent.
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      run: (_args, caller) => connectivity.check(caller),
    }),
  ];
}
