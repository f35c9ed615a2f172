import * as z from 'zod/v4';
import { AppError } from '../common/app-error.js';
import type { Caller } from '../common/request-context.js';
import { AppConfig } from '../config/config.js';
import { apiError, PrometheusApi, queryLimits, type QueryJson } from '../metric-store/api/prometheus-api.js';
import { MetricStoreService } from '../metric-store/store/metric-store.service.js';
import * as out from './schemas/metrics.js';
import { defineTool, READ_ONLY, type McpTool } from './tool.js';

const TITLES = { bad_data: 'Bad Data', execution: 'Execution Error', timeout: 'Timeout' } as const;

/** The Prometheus API's failure as a coded error: the tool error carries its type and words. */
async function prometheus(run: () => Promise<QueryJson>): Promise<QueryJson> {
  try {
    return await run();
  } catch (err) {
    const failure = apiError(err);
    const title = failure.errorType in TITLES ? TITLES[failure.errorType as keyof typeof TITLES] : 'Error';
    throw new AppError(failure.status, failure.errorType, title, failure.message);
  }
}

const query = z
  .string()
  .min(1)
  .max(16_384)
  .describe('A PromQL expression, e.g. sum by (job) (rate(http_requests_total[5m]))');

/**
 * PromQL over the built-in metric store, as GET /prometheus/api/v1/query and query_range answer
 * it (the same code, the caller's own series).
 */
export function metricTools(store: MetricStoreService, config: AppConfig): McpTool[] {
  const api = (caller: Caller) => new PrometheusApi(store, caller.owner, queryLimits(config));
  return [
    defineTool({
      name: 'query_metrics',
      title: 'PromQL instant query',
      description:
        "Evaluates a PromQL expression at one time (default now) over the caller's stored metrics: node metrics of workers (stack_node_cpu_percent, stack_node_memory_percent, stack_node_disk_percent, stack_node_containers_running by worker), the service's own metrics, and whatever was written by remote write or import. Answers Prometheus's data: resultType and result.",
      scope: 'metrics:read',
      input: {
        query,
        time: z.string().max(64).optional().describe('Unix seconds or RFC 3339; default now'),
        timeout: z.string().max(32).optional().describe('Evaluation time limit, e.g. 10s (at most 2m)'),
      },
      output: out.queryResult,
      annotations: READ_ONLY,
      run: (args, caller) => prometheus(() => api(caller).query(args)),
    }),
    defineTool({
      name: 'query_metrics_range',
      title: 'PromQL range query',
      description:
        'Evaluates a PromQL expression at each step from start to end (at most 11,000 steps) and answers a matrix: one series of [time, value] points per label set. Use it for trends, e.g. a worker CPU over the last hour.',
      scope: 'metrics:read',
      input: {
        query,
        start: z.string().max(64).describe('Unix seconds or RFC 3339'),
        end: z.string().max(64).describe('Unix seconds or RFC 3339, not before start'),
        step: z.string().max(32).describe('Resolution: a duration such as 60s or 5m, or seconds'),
        timeout: z.string().max(32).optional().describe('Evaluation time limit, e.g. 10s (at most 2m)'),
      },
      output: out.queryResult,
      annotations: READ_ONLY,
      run: (args, caller) => prometheus(() => api(caller).queryRange(args)),
    }),
  ];
}
