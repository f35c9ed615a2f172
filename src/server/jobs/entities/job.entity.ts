import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { JobCommandMsg } from '../../../contracts/agent-protocol/index.js';
import type { JobResult } from '../../../contracts/api/jobs.js';
import type { JobState, JobType } from '../job-state.js';
import type { SealedFile } from '../job-secrets.js';

/** What a job needs to be placed and sent, fixed when it is created. */
export interface JobPayload {
  command: Pick<JobCommandMsg, 'stack_name' | 'revision' | 'services'> &
    Partial<Pick<JobCommandMsg, 'keep' | 'replace' | 'log_push_url' | 'delete_volumes'>>;
  placement: { drivers: string[]; labels: Record<string, string>; cpu: number; memory_bytes: number };
  /** Secret file contents, sealed; `command.services` holds those files empty (job-secrets.ts). */
  secrets?: SealedFile[];
}

/** Per service, what the agent did: stored as it is shown (a job's `results`). */
export type JobServiceResult = JobResult;

@Entity({ name: 'jobs' })
export class JobEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ type: 'text' })
  owner: string;

  @Column({ type: 'text' })
  type: JobType;

  @Column({ name: 'stack_id', type: 'uuid' })
  stackId: string;

  @Column({ name: 'stack_name', type: 'text' })
  stackName: string;

  @Column({ type: 'integer' })
  revision: number;

  @Column({ name: 'worker_id', type: 'uuid', nullable: true })
  workerId: string | null;

  @Column({ type: 'text' })
  status: JobState;

  @Column({ type: 'integer' })
  progress: number;

  @Column({ type: 'integer' })
  attempts: number;

  @Column({ name: 'max_attempts', type: 'integer' })
  maxAttempts: number;

  @Column({ type: 'text', nullable: true })
  error: string | null;

  @Column({ type: 'jsonb' })
  payload: JobPayload;

  @Column({ type: 'jsonb', nullable: true })
  results: JobServiceResult[] | null;

  @Column({ name: 'timeout_ms', type: 'integer' })
  timeoutMs: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'dispatched_at', type: 'timestamptz', nullable: true })
  dispatchedAt: Date | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'created_by', type: 'text' })
  createdBy: string;
}
