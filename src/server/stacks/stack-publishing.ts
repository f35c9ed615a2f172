import { Injectable, Logger } from '@nestjs/common';
import type { JobEntity } from '../jobs/entities/job.entity.js';
import type { ServiceDefinition } from './definition/definition.types.js';
import type { StackEntity } from './entities/stack.entity.js';

/** What publishing needs of a stack whose job ended, as it was before the job's end was written. */
export type FinishedStack = Pick<StackEntity, 'id' | 'name' | 'owner' | 'deployedRevision'>;
import { StacksRepository } from './stacks.repository.js';

/** The stack as a publisher needs it. */
export interface PublishedStack {
  id: string;
  name: string;
  owner: string;
}

/**
 * What another feature (the tunnel) does when a stack's jobs succeed: it registers the services a
 * deployed revision declares `public`, and forgets them when the stack is destroyed. `actor` is the
 * client that asked for the job.
 */
export interface StackPublisher {
  /** The revision's `services` now run on `workerId`: their public ones are exactly what is published. */
  deployed(
    stack: PublishedStack,
    services: ServiceDefinition[],
    workerId: string,
    actor: string,
  ): Promise<void>;
  /** The stack is gone from its node and about to be deleted. */
  destroyed(stack: PublishedStack, actor: string): Promise<void>;
  /** Which of these stacks have services published now (one read for a batch). */
  withServices(stackIds: string[]): Promise<Set<string>>;
}

/**
 * Where a {@link StackPublisher} registers (the tunnel module, at start), so that stacks call into it
 * without depending on it: the tunnel imports the stacks module, never the other way round. Only
 * succeeded jobs reach the publisher; a failed deploy or destroy leaves what is published as it was.
 */
@Injectable()
export class StackPublishing {
  private readonly logger = new Logger('stacks');
  private publisher: StackPublisher | undefined;
  /**
   * The public services of each revision seen, by `<stack id>@<revision>`: revisions never change,
   * so a redeploy (the common case, and drift's resolve) costs no definition read.
   */
  private readonly publicOf = new Map<string, ServiceDefinition[]>();

  constructor(private readonly repository: StacksRepository) {}

  setPublisher(publisher: StackPublisher): void {
    this.publisher = publisher;
  }

  /**
   * A destroy job of the stack is succeeding: the publisher forgets its services, before the stack's
   * row is deleted. A publisher's failure is logged and does not undo the destroy: the services are
   * gone from their node, and the stack's row takes their routes along (a foreign key), without the
   * audit row the publisher would have written.
   */
  async destroyed(job: JobEntity, stack: FinishedStack): Promise<void> {
    if (!this.publisher) return;
    try {
      await this.publisher.destroyed({ id: stack.id, name: stack.name, owner: stack.owner }, job.createdBy);
    } catch (err) {
      this.logger.error(
        { stack_id: stack.id, job_id: job.id, err },
        'unpublishing the destroyed stack services failed; their routes go with the stack',
      );
    }
  }

  /**
   * After the stacks' own bookkeeping of the deploys of a batch (their stacks as they were): the revisions not seen
   * yet read in one statement, and the publisher called only for the stacks that have public services
   * now or had services published before, which it finds in one read. A redeploy burst and a first
   * deploy of stacks without public services then cost no statement per job. The same revision
   * deployed again without public services is skipped: its last successful deploy left nothing
   * published.
   */
  async finishedMany(items: { job: JobEntity; stack: FinishedStack }[]): Promise<void> {
    const publisher = this.publisher;
    const deploys = items.filter(
      ({ job }) => job.status === 'succeeded' && job.type === 'provision' && job.workerId,
    );
    if (!publisher || deploys.length === 0) return;
    let candidates: { job: JobEntity; stack: FinishedStack; services: ServiceDefinition[] }[];
    let published: Set<string>;
    try {
      const revisions = await this.publicServicesOf(
        deploys.map(({ job }) => ({ stackId: job.stackId, revision: job.revision })),
      );
      candidates = [];
      for (const { job, stack } of deploys) {
        const services = revisions.get(`${stack.id}@${job.revision}`);
        // A revision gone meanwhile (its stack deleted) publishes nothing.
        if (services === undefined) continue;
        if (services.length === 0 && stack.deployedRevision === job.revision) continue;
        candidates.push({ job, stack, services });
      }
      const unpublishing = candidates.filter((c) => c.services.length === 0).map((c) => c.stack.id);
      published = await publisher.withServices(unpublishing);
    } catch (err) {
      for (const { job, stack } of deploys) this.failed(stack.id, job.id, err);
      return;
    }
    for (const { job, stack, services } of candidates) {
      if (services.length === 0 && !published.has(stack.id)) continue;
      try {
        await publisher.deployed(
          { id: stack.id, name: stack.name, owner: stack.owner },
          services,
          job.workerId!,
          job.createdBy,
        );
      } catch (err) {
        this.failed(stack.id, job.id, err);
      }
    }
  }

  /** A publisher's failure is logged and does not undo the job's outcome. */
  private failed(stackId: string, jobId: string, err: unknown): void {
    this.logger.error(
      { stack_id: stackId, job_id: jobId, err },
      'publishing the stack services failed; the next successful deploy publishes them again',
    );
  }

  /**
   * The public services of each revision, by `<stack id>@<revision>`: from {@link publicOf}, and
   * those not seen yet read in one statement (answered from what was read, whatever the cache then
   * keeps). A revision that does not exist is left out.
   */
  private async publicServicesOf(
    keys: { stackId: string; revision: number }[],
  ): Promise<Map<string, ServiceDefinition[]>> {
    const found = new Map<string, ServiceDefinition[]>();
    const missing: typeof keys = [];
    for (const k of keys) {
      const known = this.publicOf.get(`${k.stackId}@${k.revision}`);
      if (known) found.set(`${k.stackId}@${k.revision}`, known);
      else missing.push(k);
    }
    if (missing.length === 0) return found;
    for (const stored of await this.repository.revisionsOf(missing)) {
      const key = `${stored.stackId}@${stored.revision}`;
      // `public` is absent (not null) in a revision stored before the key existed.
      const services = stored.definition.services.filter((s) => !!s.public);
      found.set(key, services);
      if (this.publicOf.size >= 10_000) this.publicOf.clear();
      this.publicOf.set(key, services);
    }
    return found;
  }
}
