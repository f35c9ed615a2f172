import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { ScrapeReportMsg } from '../../contracts/agent-protocol/index.js';
import { MAX_SCRAPE_LABELS, MAX_SCRAPE_SAMPLES } from '../../contracts/agent-protocol/limits.js';
import { every } from '../common/periodic.js';
import { MAX_ABS_TIMESTAMP } from '../metric-store/chunk.js';
import { MetricInputError } from '../metric-store/errors.js';
import { canonicalLabels, METRIC_NAME_LABEL } from '../metric-store/labels.js';
import { SampleBuffer } from '../metric-store/sample-buffer.js';
import type { Label } from '../metric-store/series.js';
import { MetricStoreService } from '../metric-store/store/metric-store.service.js';
import { FORGET_TARGET_MS, ScrapeStaleness } from './scrape-staleness.js';
import type { StackTarget } from './stack-targets.js';

/** Scraped samples are written this often, one batch per owner. */
const FLUSH_EVERY_MS = 1_000;
/** Samples held between flushes, all agents; more are dropped and counted. */
const MAX_PENDING_SAMPLES = 500_000;
/** What a label set of a scraped sample may hold once the target labels are added. */
const LABEL_LIMITS = { maxLabels: MAX_SCRAPE_LABELS + 8, maxNameLength: 256, maxValueLength: 2048 };

/** A timestamp the store can hold (an agent's clock or exposition may say anything). */
const validTime = (t: number): boolean => Number.isSafeInteger(t) && Math.abs(t) <= MAX_ABS_TIMESTAMP;

/** The labels the service puts on every sample of a target; the endpoint's own go `exported_`. */
export const TARGET_LABELS = ['stack', 'stack_id', 'service', 'worker_id', 'job', 'instance'] as const;

/** The target labels of one service of a stack on one worker. */
export function targetLabels(
  stack: StackTarget,
  service: string,
  workerId: string,
  port: number,
): Record<(typeof TARGET_LABELS)[number], string> {
  return {
    stack: stack.name,
    stack_id: stack.id,
    service,
    worker_id: workerId,
    job: `${stack.name}/${service}`,
    instance: `${workerId}:${port}`,
  };
}

/**
 * One scraped sample's labels with the target's: a label the endpoint exposes under a target
 * label's name is kept as `exported_<name>` (Prometheus's `honor_labels: false`). Throws
 * MetricInputError for a set the store would refuse.
 */
export function scrapedLabels(exposed: readonly Label[], target: Record<string, string>) {
  const labels: Label[] = [];
  for (const label of exposed) {
    const clash = label.name !== METRIC_NAME_LABEL && label.name in target;
    labels.push(clash ? { name: `exported_${label.name}`, value: label.value } : label);
  }
  for (const [name, value] of Object.entries(target)) labels.push({ name, value });
  return canonicalLabels(labels, { ...LABEL_LIMITS, requireName: true });
}

/**
 * The samples the agents scrape from the stacks' services into the built-in metric store, under
 * the stack owner's tenant (docs/metrics.md, "Stack services"): each sample labelled with its
 * target, and per scrape `up`, `scrape_duration_seconds` and `scrape_samples_scraped` as
 * Prometheus writes them, and stale markers for series that vanish (ScrapeStaleness). Buffered
 * and written every second.
 */
@Injectable()
export class ServiceMetricsRecorder implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('stack-monitoring');
  private readonly buffer = new SampleBuffer(MAX_PENDING_SAMPLES);
  readonly staleness = new ScrapeStaleness();
  private timer: NodeJS.Timeout | undefined;
  /** Samples refused (bad labels) since the last flush. */
  private refused = 0;

  constructor(private readonly store: MetricStoreService) {}

  onApplicationBootstrap(): void {
    this.timer = every(this.logger, 'service metrics flush', FLUSH_EVERY_MS, () => this.flush());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch((err: unknown) => this.logger.warn({ err }, 'service metrics not flushed'));
  }

  /** One part of a scrape of `stack`'s service by `workerId`; a part over the sample limit is refused whole. */
  record(stack: StackTarget, workerId: string, report: ScrapeReportMsg): void {
    if (report.samples.length > MAX_SCRAPE_SAMPLES) {
      this.refused += report.samples.length;
      return;
    }
    const at = report.timestamp_ms;
    if (!validTime(at)) {
      this.refused += report.samples.length;
      return;
    }
    const target = targetLabels(stack, report.service, workerId, report.port);
    const targetKey = `${stack.owner}\n${stack.id}\n${workerId}\n${report.service}\n${report.port}`;
    const now = Date.now();
    for (const sample of report.samples) {
      const t = sample.timestamp_ms || at;
      if (!validTime(t)) {
        this.refused++;
        continue;
      }
      let labels;
      try {
        labels = scrapedLabels(sample.labels, target);
      } catch (err) {
        if (!(err instanceof MetricInputError)) throw err;
        this.refused++;
        continue;
      }
      this.buffer.add(stack.owner, labels, t, sample.value);
      if (!sample.timestamp_ms) this.staleness.seen(targetKey, labels, now);
    }
    if (!report.last) return;
    for (const gone of this.staleness.ended(targetKey, now)) this.buffer.addStale(stack.owner, gone, at);
    const scrape = (name: string, value: number) =>
      this.buffer.add(
        stack.owner,
        scrapedLabels([{ name: METRIC_NAME_LABEL, value: name }], target),
        at,
        value,
      );
    scrape('up', report.up ? 1 : 0);
    scrape('scrape_duration_seconds', report.duration_seconds);
    scrape('scrape_samples_scraped', report.samples_scraped);
  }

  /** Writes what was recorded since the last flush. */
  async flush(): Promise<void> {
    const refused = this.refused;
    this.refused = 0;
    this.staleness.forget(Date.now() - FORGET_TARGET_MS);
    const dropped = await this.buffer.flush(this.store);
    if (dropped + refused > 0)
      this.logger.warn({ dropped, refused }, 'scraped samples not stored (buffer full, or labels refused)');
  }
}
