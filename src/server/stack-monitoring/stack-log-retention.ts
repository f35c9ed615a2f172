import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Leases } from '../common/leases.js';
import { every } from '../common/periodic.js';
import { getCatalog } from '../stacks/catalog/catalog.js';
import { StackLogsRepository } from './stack-logs.repository.js';

/** The lease that makes the sweep run on one replica at a time. */
export const STACK_LOGS_LEASE = 'stack-logs';
const LEASE_TTL_MS = 60_000;
const SWEEP_EVERY_MS = 60_000;
/** Lines deleted per statement, and statements per sweep at most: a backlog goes in steps. */
const BATCH = 10_000;
const ROUNDS = 50;

/**
 * Deletes service output older than its stack's retention (`monitoring.log_store.retention` of the
 * revision it runs, else the catalogue's default, 7 days) once a minute, on whichever replica holds
 * the lease. A stack's lines go with the stack (the table references it).
 */
@Injectable()
export class StackLogRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('stack-monitoring');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly leases: Leases,
    private readonly repository: StackLogsRepository,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = every(this.logger, 'stack log retention', SWEEP_EVERY_MS, () => this.sweep());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.leases.release(STACK_LOGS_LEASE).catch(() => undefined);
  }

  /** One sweep if this replica holds (or takes) the lease; answers the lines deleted (null: not the holder). */
  async sweep(now = new Date()): Promise<number | null> {
    if (!(await this.leases.holds(STACK_LOGS_LEASE, LEASE_TTL_MS))) return null;
    const days = getCatalog().monitoring.defaults.log_retention_days;
    let deleted = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const count = await this.repository.deleteExpired(now, days, BATCH);
      deleted += count;
      if (count < BATCH) break;
    }
    if (deleted > 0) this.logger.log({ deleted }, 'stack log retention applied');
    return deleted;
  }
}
