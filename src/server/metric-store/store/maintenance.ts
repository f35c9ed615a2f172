import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Leases } from '../../common/leases.js';
import { every } from '../../common/periodic.js';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Gauge } from 'prom-client';
import { METRIC } from '../../metrics/metric-names.js';
import { Compactor, type FoldLimit } from './compactor.js';
import { MetricStoreService } from './metric-store.service.js';
import { Retention } from './retention.js';

/** The lease that makes compaction and retention run on one replica at a time. */
export const MAINTENANCE_LEASE = 'metric-store';
const LEASE_TTL_MS = 10_000;
const COMPACT_EVERY_MS = 2_000;
const RETENTION_EVERY_MS = 60_000;
/** How often, at most, the store's tables are vacuumed after compaction or retention deleted rows. */
const VACUUM_EVERY_MS = 60_000;
/** Rounds per tick at most: a backlog is worked off in steps that leave the database to others. */
const ROUNDS_PER_TICK = 25;

/**
 * Compaction every 2 s and retention every minute, on whichever replica holds the lease (taken
 * over within its 10 s TTL when the holder dies). After either deleted rows, the batch and chunk
 * tables are vacuumed (at most once a minute), so the space is reused, and an emptied batch table
 * shrinks: the embedded database has no autovacuum, and PostgreSQL's waits for 20 % of a table.
 */
@Injectable()
export class Maintenance implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('metric-store');
  private timer: NodeJS.Timeout | undefined;
  private usageTimer: NodeJS.Timeout | undefined;
  private lastRetention = 0;
  private lastVacuum = 0;
  /** Rows were deleted since the last vacuum. */
  private deleted = false;

  constructor(
    private readonly leases: Leases,
    private readonly compactor: Compactor,
    private readonly retention: Retention,
    private readonly store: MetricStoreService,
    private readonly dataSource: DataSource,
    @InjectMetric(METRIC.metricStoreBytes) private readonly bytes: Gauge,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = every(this.logger, 'metric-store maintenance', COMPACT_EVERY_MS, () => this.tick());
    // Every replica reports the store's size in its own /metrics.
    this.usageTimer = every(this.logger, 'metric-store usage', RETENTION_EVERY_MS, () => this.measure());
    void this.measure().catch((err: unknown) => this.logger.warn({ err }, 'metric store not measured'));
  }

  /** Sets the series and bytes gauges. */
  async measure(): Promise<void> {
    await this.store.seriesCount();
    this.bytes.set(await this.retention.diskBytes());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    clearInterval(this.usageTimer);
    await this.leases.release(MAINTENANCE_LEASE).catch(() => undefined);
  }

  /** One maintenance pass if this replica holds (or takes) the lease; exposed for tests. */
  async tick(now = Date.now()): Promise<boolean> {
    if (!(await this.leases.acquire(MAINTENANCE_LEASE, LEASE_TTL_MS))) return false;
    await this.compactAll(await this.compactor.limit(now));
    if (now - this.lastRetention >= RETENTION_EVERY_MS) {
      const round = await this.retention.round(now);
      this.lastRetention = now;
      if (round.expired + round.capped + round.batches > 0) {
        this.deleted = true;
        this.logger.log(round, 'metric retention applied');
      }
    }
    if (this.deleted && now - this.lastVacuum >= VACUUM_EVERY_MS) await this.vacuum(now);
    return true;
  }

  /** Folds what the limit allows until nothing is left or the round limit is reached; returns the batches folded. */
  async compactAll(limit: FoldLimit): Promise<number> {
    let folded = 0;
    for (let i = 0; i < ROUNDS_PER_TICK; i++) {
      const round = await this.compactor.round(limit);
      if (round.batches === 0) break;
      folded += round.batches;
    }
    if (folded > 0) this.deleted = true;
    return folded;
  }

  /** Vacuums the batch and chunk tables (outside any transaction, as VACUUM must be). */
  async vacuum(now = Date.now()): Promise<void> {
    this.deleted = false;
    this.lastVacuum = now;
    await this.dataSource.query(`VACUUM metric_batches, metric_chunks`);
  }
}
