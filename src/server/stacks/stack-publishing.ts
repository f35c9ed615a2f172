import { Injectable, Logger } from '@nestjs/common';
import type { JobEntity } from '../jobs/entities/job.entity.js';
import type { ServiceDefinition } from './definition/definition.types.js';
import type { StackEntity } from './entities/stack.entity.js';
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

  constructor(private readonly repository: StacksRepository) {}

  setPublisher(publisher: StackPublisher): void {
    this.publisher = publisher;
  }

  /**
   * After the stack's own bookkeeping of a finished job. A publisher's failure is logged and does not
   * undo the job's outcome: the services run, and the next successful deploy publishes them again.
   */
  async finished(job: JobEntity, stack: StackEntity): Promise<void> {
    if (!this.publisher || job.status !== 'succeeded') return;
    const ref: PublishedStack = { id: stack.id, name: stack.name, owner: stack.owner };
    try {
      if (job.type === 'destroy') await this.publisher.destroyed(ref, job.createdBy);
      else if (job.type === 'provision' && job.workerId) {
        const revision = await this.repository.revision(stack.id, job.revision);
        if (revision)
          await this.publisher.deployed(ref, revision.definition.services, job.workerId, job.createdBy);
      }
    } catch (err) {
      this.logger.error(
        { stack_id: stack.id, job_id: job.id, err },
        'publishing the stack services failed; the next successful deploy publishes them again',
      );
    }
  }
}
