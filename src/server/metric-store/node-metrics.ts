import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { every } from '../common/periodic.js';
import { labelsFromRecord, labelsKey } from './labels.js';
import { SampleBuffer } from './sample-buffer.js';
import type { LabelSet } from './series.js';
import { MetricStoreService } from './store/metric-store.service.js';

/** A heartbeat's node figures (the worker view's `metrics`). */
export interface NodeFigures {
  cpu_percent: number;
  memory_percent: number;
  disk_percent: number;
  containers_running: number;
}

/** The series each heartbeat adds, labelled `worker_id` and `worker` (the worker's name). */
export const NODE_SERIES = {
  cpu_percent: 'stack_node_cpu_percent',
  memory_percent: 'stack_node_memory_percent',
  disk_percent: 'stack_node_disk_percent',
  containers_running: 'stack_node_containers_running',
} as const satisfies Record<keyof NodeFigures, string>;

/**
 * The series each state report adds per service of a stack, labelled `stack_id`, `service` and
 * `worker_id`: whether it runs, the runtime's restart count of its current container or process,
 * and the latency of its last health check (only for services that have one and were checked).
 */
export const SERVICE_SERIES = {
  up: 'stack_service_up',
  restarts: 'stack_service_restarts',
  health_latency: 'stack_service_health_latency_seconds',
} as const;

/** One service's figures from a state report. */
export interface ServiceFigures {
  stackId: string;
  service: string;
  up: boolean;
  restarts: number;
  /** Seconds; null when the service has no health check result. */
  healthLatency: number | null;
}

const FLUSH_EVERY_MS = 5_000;
/** A worker's label sets are forgotten after this many flushes without a heartbeat (a minute). */
const FORGET_AFTER_FLUSHES = 12;

/** The node series of one worker, built once rather than at each heartbeat. */
interface WorkerSeries {
  worker: string;
  series: { field: keyof NodeFigures; labels: LabelSet; key: string }[];
  /** The flush count when it was last used. */
  used: number;
}
/** Samples held at most between flushes (25,000 heartbeats); beyond it they are dropped (and counted). */
const MAX_PENDING_SAMPLES = 100_000;

/**
 * Node and service metrics into the metric store: each heartbeat's figures and each state report's
 * services become samples of the worker's owner, collected in memory and written every 5 s as one
 * batch per owner (heartbeats and reports arrive every few seconds per worker; one write each
 * would be a row each).
 */
@Injectable()
export class NodeMetricsRecorder implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('metric-store');
  private readonly buffer = new SampleBuffer(MAX_PENDING_SAMPLES);
  private timer: NodeJS.Timeout | undefined;
  /**
   * Each heartbeating worker's label sets and keys: at 10,000 agents, building them at every
   * heartbeat (1,000 a second) was a fifth of what the service allocated (docs/benchmarks.md).
   */
  private readonly workers = new Map<string, WorkerSeries>();
  private flushes = 0;

  constructor(private readonly store: MetricStoreService) {}

  onApplicationBootstrap(): void {
    this.timer = every(this.logger, 'node metrics flush', FLUSH_EVERY_MS, () => this.flush());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch((err: unknown) => this.logger.warn({ err }, 'node metrics not flushed'));
  }

  record(owner: string, workerId: string, worker: string, figures: NodeFigures, at = Date.now()): void {
    let known = this.workers.get(workerId);
    if (known === undefined || known.worker !== worker) {
      known = {
        worker,
        series: (Object.entries(NODE_SERIES) as [keyof NodeFigures, string][]).map(([field, name]) => {
          const labels = labelsFromRecord({ __name__: name, worker_id: workerId, worker });
          return { field, labels, key: labelsKey(labels) };
        }),
        used: this.flushes,
      };
      this.workers.set(workerId, known);
    }
    known.used = this.flushes;
    for (const { field, labels, key } of known.series)
      this.buffer.addKeyed(owner, key, labels, at, figures[field]);
  }

  /** A state report's services of one worker. */
  recordServices(owner: string, workerId: string, services: ServiceFigures[], at = Date.now()): void {
    for (const s of services) {
      const base = { stack_id: s.stackId, service: s.service, worker_id: workerId };
      const add = (name: string, value: number): void => {
        this.buffer.add(owner, labelsFromRecord({ __name__: name, ...base }), at, value);
      };
      add(SERVICE_SERIES.up, s.up ? 1 : 0);
      add(SERVICE_SERIES.restarts, s.restarts);
      if (s.healthLatency !== null) add(SERVICE_SERIES.health_latency, s.healthLatency);
    }
  }

  /** Writes what was recorded since the last flush. */
  async flush(): Promise<void> {
    const flushes = ++this.flushes;
    for (const [workerId, known] of this.workers)
      if (flushes - known.used > FORGET_AFTER_FLUSHES) this.workers.delete(workerId);
    const dropped = await this.buffer.flush(this.store);
    if (dropped > 0) this.logger.warn({ dropped }, 'node metrics dropped: the store fell behind');
  }
}
