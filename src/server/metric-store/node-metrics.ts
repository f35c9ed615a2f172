import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { every } from '../common/periodic.js';
import { labelsFromRecord, labelsKey } from './labels.js';
import { MetricStoreService, type IncomingSeries } from './store/metric-store.service.js';

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
/** Heartbeats held at most between flushes; beyond it the oldest are dropped (and counted as a warning). */
const MAX_PENDING = 100_000;

type Collected = IncomingSeries & { timestamps: number[]; values: number[] };

interface Sample {
  labels: Record<string, string>;
  value: number;
}

interface Pending {
  owner: string;
  at: number;
  samples: Sample[];
}

/**
 * Node and service metrics into the metric store: each heartbeat's figures and each state report's
 * services become samples of the worker's owner, collected in memory and written every 5 s as one
 * batch per owner (heartbeats and reports arrive every few seconds per worker; one write each
 * would be a row each).
 */
@Injectable()
export class NodeMetricsRecorder implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('metric-store');
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private droppedSinceLog = 0;

  constructor(private readonly store: MetricStoreService) {}

  onApplicationBootstrap(): void {
    this.timer = every(this.logger, 'node metrics flush', FLUSH_EVERY_MS, () => this.flush());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.flush().catch((err: unknown) => this.logger.warn({ err }, 'node metrics not flushed'));
  }

  record(owner: string, workerId: string, worker: string, figures: NodeFigures, at = Date.now()): void {
    this.push({
      owner,
      at,
      samples: (Object.entries(NODE_SERIES) as [keyof NodeFigures, string][]).map(([field, name]) => ({
        labels: { __name__: name, worker_id: workerId, worker },
        value: figures[field],
      })),
    });
  }

  /** A state report's services of one worker. */
  recordServices(owner: string, workerId: string, services: ServiceFigures[], at = Date.now()): void {
    const samples: Sample[] = [];
    for (const s of services) {
      const labels = { stack_id: s.stackId, service: s.service, worker_id: workerId };
      samples.push({ labels: { __name__: SERVICE_SERIES.up, ...labels }, value: s.up ? 1 : 0 });
      samples.push({ labels: { __name__: SERVICE_SERIES.restarts, ...labels }, value: s.restarts });
      if (s.healthLatency !== null)
        samples.push({
          labels: { __name__: SERVICE_SERIES.health_latency, ...labels },
          value: s.healthLatency,
        });
    }
    if (samples.length > 0) this.push({ owner, at, samples });
  }

  private push(pending: Pending): void {
    if (this.pending.length >= MAX_PENDING) {
      this.pending.shift();
      this.droppedSinceLog++;
    }
    this.pending.push(pending);
  }

  /** Writes what was recorded since the last flush. */
  async flush(): Promise<void> {
    if (this.droppedSinceLog > 0) {
      this.logger.warn({ dropped: this.droppedSinceLog }, 'node metrics dropped: the store fell behind');
      this.droppedSinceLog = 0;
    }
    const taken = this.pending;
    this.pending = [];
    const byOwner = new Map<string, Map<string, Collected>>();
    for (const p of taken) {
      let series = byOwner.get(p.owner);
      if (series === undefined) byOwner.set(p.owner, (series = new Map<string, Collected>()));
      for (const sample of p.samples) {
        const labels = labelsFromRecord(sample.labels);
        const key = labelsKey(labels);
        let s = series.get(key);
        if (s === undefined) series.set(key, (s = { key, labels, timestamps: [], values: [] }));
        s.timestamps.push(Math.round(p.at));
        s.values.push(sample.value);
      }
    }
    for (const [owner, series] of byOwner) await this.store.write(owner, [...series.values()]);
  }
}
