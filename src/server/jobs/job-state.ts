/**
 * Job states and every allowed transition, in one place (docs/jobs.md has the graph). The service
 * asks `nextJobState`; a transition it does not list is refused, so a late or repeated agent event
 * cannot move a finished job.
 */

export const JOB_STATES = [
  'queued',
  'dispatched',
  'running',
  'succeeded',
  'failed',
  'cancelling',
  'cancelled',
] as const;
export type JobState = (typeof JOB_STATES)[number];

export const JOB_TYPES = ['provision', 'destroy'] as const;
export type JobType = (typeof JOB_TYPES)[number];

export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled'];
export const ACTIVE_STATES: readonly JobState[] = ['queued', 'dispatched', 'running', 'cancelling'];

export const isTerminal = (state: JobState): boolean => TERMINAL_STATES.includes(state);

export type JobEvent =
  /** The dispatcher placed the job and sent it to an agent. */
  | { type: 'dispatch' }
  /** The agent confirmed it has the job. */
  | { type: 'accepted' }
  /** The agent did not confirm in time, or its stream closed before it did: try again. */
  | { type: 'requeue' }
  | { type: 'succeeded' }
  | { type: 'failed' }
  /** The agent stopped the job on request. */
  | { type: 'cancelled' }
  /** The operator asked for a cancel. */
  | { type: 'cancel' }
  /** The operator forced cleanup; or the job ran out of time or attempts. */
  | { type: 'abort' }
  /** A queued job that needs no worker (destroying a stack that was never placed). */
  | { type: 'nothing_to_do' };

/** The state after `event`, or null when the event does not apply in `state`. */
export function nextJobState(state: JobState, event: JobEvent): JobState | null {
  switch (event.type) {
    case 'dispatch':
      return state === 'queued' ? 'dispatched' : null;
    case 'accepted':
      return state === 'dispatched' ? 'running' : null;
    case 'requeue':
      return state === 'dispatched' ? 'queued' : null;
    case 'succeeded':
    case 'failed':
      // A job cancelled too late still reports what really happened on the node.
      return state === 'dispatched' || state === 'running' || state === 'cancelling' ? event.type : null;
    case 'cancelled':
      return state === 'dispatched' || state === 'running' || state === 'cancelling' ? 'cancelled' : null;
    case 'cancel':
      if (state === 'queued') return 'cancelled';
      return state === 'dispatched' || state === 'running' ? 'cancelling' : null;
    case 'abort':
      return isTerminal(state) ? null : 'failed';
    case 'nothing_to_do':
      return state === 'queued' ? 'succeeded' : null;
  }
}
