import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { register } from 'prom-client';
import { OPERATOR_OWNER } from '../auth/scopes.js';
import { Leases } from '../common/leases.js';
import { every } from '../common/periodic.js';
import { AppConfig } from '../config/config.js';
import { labelsFromRecord, labelsKey } from './labels.js';
import { MetricStoreService, type IncomingSeries } from './store/metric-store.service.js';
import { parseTextExposition } from './text-import.js';

/** The `job` label of the service's own series. */
export const SELF_JOB = 'stack-orchestrator';

/**
 * Every replica stores its own /metrics every METRICS_SCRAPE_INTERVAL, as Prometheus would scrape
 * it: the exposition read in process (no HTTP round trip), labelled `job` and `instance` (this
 * replica), with `up` 1, stamped at the interval's start (regular timestamps compress best). The
 * series belong to the operator owner.
 */
@Injectable()
export class SelfScrape implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('metric-store');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: MetricStoreService,
    private readonly leases: Leases,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = every(this.logger, 'self scrape', this.config.metrics.scrapeIntervalMs, () => this.scrape());
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  /** One scrape, stored; answers how many series it wrote. */
  async scrape(now = Date.now()): Promise<number> {
    const interval = this.config.metrics.scrapeIntervalMs;
    const at = Math.floor(now / interval) * interval;
    const parsed = parseTextExposition(await register.metrics(), at);
    const target = { job: SELF_JOB, instance: this.leases.holder };
    const series: IncomingSeries[] = [
      ...parsed.series.map((s) => {
        const labels = labelsFromRecord({
          ...Object.fromEntries(s.labels.map((l) => [l.name, l.value])),
          ...target,
        });
        return { key: labelsKey(labels), labels, timestamps: s.timestamps, values: s.values };
      }),
    ];
    const up = labelsFromRecord({ __name__: 'up', ...target });
    series.push({ key: labelsKey(up), labels: up, timestamps: [at], values: [1] });
    await this.store.writeMetadata(OPERATOR_OWNER, parsed.metadata);
    await this.store.write(OPERATOR_OWNER, series, now);
    return series.length;
  }
}
