import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Leases } from '../../common/leases.js';
import { every } from '../../common/periodic.js';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Gauge } from 'prom-client';
import { METRIC } from '../../metrics/metric-names.js';
import { Compactor } from './compactor.js';
import { MetricStoreService } from './metric-store.service.js';
import { Retention } from './retention.js';

/** The lease that makes compaction and retention run on one replica at a time. */
export const MAINTENANCE_LEASE = 'metric-store';
const LEASE_TTL_MS = 10_000;
const COMPACT_EVERY_MS = 2_000;
const RETENTION_EVERY_MS = 60_000;
/** Rounds per tick at most: a backlog is worked off in steps that leave the database to others. */
const ROUNDS_PER_TICK = 25;

/**
 * Compaction every 2 s and retention every minute, on whichever replica holds the lease (taken
 * over within its 10 s TTL when the holder dies).
 */
@Injectable()
export class Maintenance implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('metric-store');
  private timer: NodeJS.Timeout | undefined;
  private usageTimer: NodeJS.Timeout | undefined;
  private lastRetention = 0;

  constructor(
    private readonly leases: Leases,
    private readonly compactor: Compactor,
    private readonly retention: Retention,
    private readonly store: MetricStoreService,
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
    await this.compactAll();
    if (now - this.lastRetention >= RETENTION_EVERY_MS) {
      const round = await this.retention.round(now);
      this.lastRetention = now;
      if (round.expired + round.capped + round.batches > 0)
        this.logger.log(round, 'metric retention applied');
    }
    return true;
  }

  /** Folds batches until none are left or the round limit is reached. */
  async compactAll(): Promise<void> {
    for (let i = 0; i < ROUNDS_PER_TICK; i++) {
      const round = await this.compactor.round();
      if (round.batches === 0) return;
    }
  }
}
