import type { Caller } from '../common/request-context.js';
import type { JobView } from '../../contracts/api/jobs.js';
import type { StackDefinition } from './definition/definition.types.js';
import type { StackEntity } from './entities/stack.entity.js';
import type { WorkerReport } from './stack-health.js';
import type { StackReportsService } from './stack-reports.service.js';
import type { StacksRepository } from './stacks.repository.js';
import type { StacksService } from './stacks.service.js';

/**
 * All the drift feature may do with stacks: read the caller's stacks and the placed ones, a
 * revision's definition and the agents' latest reports, record ignore rules and the drift status,
 * and ask for a deploy (a resolve). Drift depends on this and on nothing else of the stacks feature.
 */
export interface StacksForDrift {
  /** The caller's stack, or 404 (another owner's stack is not found either). */
  owned(caller: Caller, id: string): Promise<StackEntity>;
  /** Stacks placed on a worker (any owner: the agent's reports speak for its node). */
  placedOn(workerId: string): Promise<StackEntity[]>;
  /** Every placed stack, for the scheduled drift check. */
  allPlaced(): Promise<StackEntity[]>;
  /** The definition of one revision. */
  definitionAt(stackId: string, revision: number): Promise<StackDefinition | undefined>;
  /** The latest state report of a worker connected to this replica. */
  reportOf(workerId: string): WorkerReport | undefined;
  setDriftIgnores(stackId: string, ignores: string[]): Promise<void>;
  setDriftStatus(stackId: string, status: StackEntity['driftStatus'], at: Date): Promise<void>;
  /** A provision job of the current revision, replacing the services named. */
  deploy(caller: Caller, id: string, replace: string[]): Promise<JobView>;
}

/** The Nest token under which the stacks module provides {@link StacksForDrift}. */
export const STACKS_FOR_DRIFT = Symbol('StacksForDrift');

/** The stacks feature's side of {@link StacksForDrift}. */
export function stacksForDrift(
  stacks: StacksService,
  repository: StacksRepository,
  reports: StackReportsService,
): StacksForDrift {
  return {
    owned: (caller, id) => stacks.owned(caller, id),
    placedOn: (workerId) => repository.placedOn(workerId),
    allPlaced: () => repository.allPlaced(),
    definitionAt: (stackId, revision) => stacks.definitionAt(stackId, revision),
    reportOf: (workerId) => reports.reportOf(workerId),
    setDriftIgnores: async (stackId, ignores) => {
      await repository.update(stackId, { driftIgnores: ignores });
    },
    setDriftStatus: async (stackId, status, at) => {
      await repository.update(stackId, { driftStatus: status, driftCheckedAt: at });
    },
    deploy: (caller, id, replace) => stacks.deploy(caller, id, replace),
  };
}
