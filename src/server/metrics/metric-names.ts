/** The metrics of the interface document, part 2, the tunnel's (issue 12) and the metric store's (issue 14). */
export const METRIC = {
  apiRequests: 'stack_api_requests_total',
  apiRequestDuration: 'stack_api_request_duration_seconds',
  workersConnected: 'stack_workers_connected',
  workersHealthy: 'stack_workers_healthy',
  jobs: 'stack_jobs_total',
  jobDuration: 'stack_jobs_duration_seconds',
  stacks: 'stack_stacks_total',
  driftDetected: 'stack_drift_detected_total',
  workerTransitions: 'stack_worker_transitions_total',
  tunnelUp: 'stack_tunnel_up',
  tunnelReconnects: 'stack_tunnel_reconnects_total',
  metricStoreSeries: 'stack_metric_store_series',
  metricStoreSamples: 'stack_metric_store_samples_total',
  metricStoreDropped: 'stack_metric_store_dropped_samples_total',
  metricStoreBytes: 'stack_metric_store_bytes',
  memoryTrims: 'stack_memory_trims_total',
  embeddedVacuums: 'stack_embedded_vacuum_operations_total',
  embeddedVacuumSeconds: 'stack_embedded_vacuum_seconds_total',
  agentConnectSeconds: 'stack_agent_connect_seconds',
  agentConnectionsRefused: 'stack_agent_connections_refused_total',
} as const;

/** Label value for requests no route matched, so unknown paths cannot grow the label set. */
export const UNMATCHED_ROUTE = 'unmatched';
