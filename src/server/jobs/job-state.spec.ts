import { describe, expect, it } from 'vitest';
import { JOB_STATES, nextJobState, type JobEvent, type JobState } from './job-state.js';

const EVENTS: JobEvent['type'][] = [
  'dispatch',
  'accepted',
  'requeue',
  'succeeded',
  'failed',
  'cancelled',
  'cancel',
  'abort',
  'nothing_to_do',
];

/** The whole table: [state, event] -> next state; anything not listed is refused. */
const ALLOWED: Record<string, JobState> = {
  'queued:dispatch': 'dispatched',
  'queued:cancel': 'cancelled',
  'queued:abort': 'failed',
  'queued:nothing_to_do': 'succeeded',
  'dispatched:accepted': 'running',
  'dispatched:requeue': 'queued',
  'dispatched:succeeded': 'succeeded',
  'dispatched:failed': 'failed',
  'dispatched:cancelled': 'cancelled',
  'dispatched:cancel': 'cancelling',
  'dispatched:abort': 'failed',
  'running:succeeded': 'succeeded',
  'running:failed': 'failed',
  'running:cancelled': 'cancelled',
  'running:cancel': 'cancelling',
  'running:abort': 'failed',
  'cancelling:succeeded': 'succeeded',
  'cancelling:failed': 'failed',
  'cancelling:cancelled': 'cancelled',
  'cancelling:abort': 'failed',
};

describe('job state machine', () => {
  for (const state of JOB_STATES) {
    for (const event of EVENTS) {
      const expected = ALLOWED[`${state}:${event}`] ?? null;
      it(`${state} + ${event} -> ${expected ?? 'refused'}`, () => {
        expect(nextJobState(state, { type: event })).toBe(expected);
      });
    }
  }

  it('never leaves a terminal state', () => {
    for (const state of ['succeeded', 'failed', 'cancelled'] as const) {
      for (const event of EVENTS) expect(nextJobState(state, { type: event })).toBeNull();
    }
  });
});
