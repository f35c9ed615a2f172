import { Global, Module } from '@nestjs/common';
import {
  PrometheusModule,
  makeCounterProvider,
  makeGaugeProvider,
  makeHistogramProvider,
} from '@willsoto/nestjs-prometheus';
import { collectDefaultMetrics, register } from 'prom-client';
import { METRIC } from './metric-names.js';
import { HttpMetrics } from './http-metrics.js';
import { MetricsController } from './metrics.controller.js';

// Default process metrics are registered once per process (tests start several apps in one).
if (register.getSingleMetric('process_cpu_user_seconds_total') === undefined) {
  collectDefaultMetrics();
  // prom-client exports these gauges twice, once with a `_total` suffix that promtool rejects for
  // non-counters; the unsuffixed twins (nodejs_active_handles, ...) carry the same values.
  for (const name of [
    'nodejs_active_handles_total',
    'nodejs_active_requests_total',
    'nodejs_active_resources_total',
  ]) {
    register.removeSingleMetric(name);
  }
}

const providers = [
  makeCounterProvider({
    name: METRIC.apiRequests,
    help: 'API requests answered, by method, route template and HTTP status code.',
    labelNames: ['method', 'route', 'status'],
  }),
  makeHistogramProvider({
    name: METRIC.apiRequestDuration,
    help: 'API request latency in seconds, by method, route template and HTTP status code.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  }),
  makeGaugeProvider({ name: METRIC.workersConnected, help: 'Agents connected to the agent gateway now.' }),
  makeGaugeProvider({ name: METRIC.workersHealthy, help: 'Workers whose status is healthy now.' }),
  makeCounterProvider({
    name: METRIC.jobs,
    help: 'Jobs that reached a terminal status, by type and status.',
    labelNames: ['type', 'status'],
  }),
  makeHistogramProvider({
    name: METRIC.jobDuration,
    help: 'Job execution time in seconds, from start to terminal status, by type and status.',
    labelNames: ['type', 'status'],
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
  }),
  makeGaugeProvider({ name: METRIC.stacks, help: 'Stacks managed now.' }),
  makeCounterProvider({
    name: METRIC.driftDetected,
    help: 'Drift items detected, each counted once when first seen, by kind.',
    labelNames: ['kind'],
  }),
  makeGaugeProvider({
    name: METRIC.tunnelUp,
    help: '1 while this replica holds a running tunnel, else 0.',
  }),
  makeCounterProvider({
    name: METRIC.tunnelReconnects,
    help: 'Times the tunnel held by this replica dropped and was reconnected.',
  }),
  makeGaugeProvider({
    name: METRIC.metricStoreSeries,
    help: 'Series in the metric store, as this replica last read them (every owner).',
  }),
  makeCounterProvider({
    name: METRIC.metricStoreSamples,
    help: 'Samples this replica stored in the metric store (remote write, import, own scrape, heartbeats).',
  }),
  makeCounterProvider({
    name: METRIC.metricStoreDropped,
    help: 'Samples this replica dropped: older than their series newest by METRICS_OOO_WINDOW, or than retention.',
    labelNames: ['reason'],
  }),
  makeGaugeProvider({
    name: METRIC.metricStoreBytes,
    help: 'Bytes of the metric store on disk (its tables and indexes), as last measured.',
  }),
  makeCounterProvider({
    name: METRIC.memoryTrims,
    help: "Times this process gave its allocator's free memory back to the system (MEMORY_TRIM_INTERVAL), by whether any was released.",
    labelNames: ['released'],
  }),
  makeCounterProvider({
    name: METRIC.embeddedVacuums,
    help: 'VACUUM and ANALYZE runs of the embedded database (which has no autovacuum of its own), by operation.',
    labelNames: ['operation'],
  }),
  makeCounterProvider({
    name: METRIC.embeddedVacuumSeconds,
    help: 'Seconds the embedded database spent in those VACUUM and ANALYZE runs (other statements wait meanwhile).',
  }),
  makeHistogramProvider({
    name: METRIC.agentConnectSeconds,
    help: 'Agent connections on this replica, seconds per phase: queued (accept to admission), handshake (admission to the Connect stream: TLS and HTTP/2), hello (hello to welcome: the turn and the database).',
    labelNames: ['phase'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 7.5, 10, 12.5, 15, 30],
  }),
  makeCounterProvider({
    name: METRIC.agentConnectionsRefused,
    help: 'Agent connections this replica closed unadmitted, by reason: queue_full, or waited_too_long (its agent has given up).',
    labelNames: ['reason'],
  }),
  makeCounterProvider({
    name: METRIC.workerTransitions,
    help: 'Worker status transitions, by previous and new status.',
    labelNames: ['from', 'to'],
  }),
];

@Global()
@Module({
  imports: [
    PrometheusModule.register({
      path: '/metrics',
      controller: MetricsController,
      defaultMetrics: { enabled: false },
    }),
  ],
  providers: [...providers, HttpMetrics],
  exports: [...providers, HttpMetrics],
})
export class MetricsModule {}
