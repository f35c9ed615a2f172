import { Module } from '@nestjs/common';
import { IngestController } from './api/ingest.controller.js';
import { PrometheusController } from './api/prometheus.controller.js';
import { NodeMetricsRecorder } from './node-metrics.js';
import { SelfScrape } from './self-scrape.js';
import { Compactor } from './store/compactor.js';
import { Maintenance } from './store/maintenance.js';
import { MetricStoreService } from './store/metric-store.service.js';
import { Retention } from './store/retention.js';
import { SampleStore } from './store/sample-store.js';
import { SeriesIndex } from './store/series-index.js';

/**
 * The built-in metric store (docs/metric-store-design.md): storage, compaction and retention, the
 * Prometheus API, and the series it records itself (its own /metrics, node heartbeats).
 */
@Module({
  controllers: [PrometheusController, IngestController],
  providers: [
    SeriesIndex,
    SampleStore,
    Compactor,
    Retention,
    Maintenance,
    MetricStoreService,
    NodeMetricsRecorder,
    SelfScrape,
  ],
  exports: [MetricStoreService, NodeMetricsRecorder],
})
export class MetricStoreModule {}
