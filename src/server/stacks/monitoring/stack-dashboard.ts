import { DATASOURCE_UID } from './grafana-provisioning.js';
import { token } from './monitoring-paths.js';

export interface DashboardInput {
  stack: string;
  /** Services the stack's Prometheus scrapes (they declare `metrics`). */
  scraped: string[];
  /** Whether the stack has a log store. */
  logs: boolean;
}

interface Target {
  expr: string;
  legend: string;
}

const WIDTH = 12;
const HEIGHT = 8;

/**
 * The stack's Grafana dashboard, with metric names that exist:
 * - from the stack's Prometheus: `up` and request rates of the scraped services (any counter named
 *   `*_requests_total` they expose, client libraries' own `promhttp_*` left out);
 * - from the orchestrator: the node's `stack_node_cpu_percent` and `stack_node_memory_percent`
 *   (heartbeats) of the worker the stack runs on, and `stack_service_up`, `stack_service_restarts`
 *   and `stack_service_health_latency_seconds` (the agent's state reports, docs/metrics.md);
 * - from the log store: the services' output.
 * The stack is selected by `stack_id` (a deploy-time value: the uid and the selectors carry the
 * `{{stack_id}}` token; the legends use Grafana's own `{{label}}` syntax with other names).
 */
export function stackDashboard(input: DashboardInput): string {
  const stack = `stack_id="${token('stack_id')}"`;
  const panels: object[] = [];
  // Two panels a row; a logs panel takes a row of its own.
  let column = 0;
  let row = 0;
  const place = (full: boolean) => {
    if (full && column > 0) [column, row] = [0, row + 1];
    const at = { x: column * WIDTH, y: row * HEIGHT, w: full ? 2 * WIDTH : WIDTH, h: HEIGHT };
    if (full || column === 1) [column, row] = [0, row + 1];
    else column = 1;
    return at;
  };
  const add = (title: string, uid: string, targets: Target[], unit: string, type = 'timeseries') => {
    panels.push({
      id: panels.length + 1,
      type,
      title,
      datasource: { type: uid === DATASOURCE_UID.logs ? 'loki' : 'prometheus', uid },
      gridPos: place(type === 'logs'),
      targets: targets.map((t, i) => ({
        refId: String.fromCharCode(65 + i),
        datasource: { type: uid === DATASOURCE_UID.logs ? 'loki' : 'prometheus', uid },
        expr: t.expr,
        ...(type === 'logs' ? {} : { legendFormat: t.legend }),
      })),
      ...(type === 'logs'
        ? { options: { showTime: true, wrapLogMessage: true, sortOrder: 'Descending' } }
        : { fieldConfig: { defaults: { unit }, overrides: [] }, options: { legend: { showLegend: true } } }),
    });
  };
  // The node the stack runs on: the worker its services are reported from.
  const node = (series: string) => `${series} and on (worker_id) stack_service_up{${stack}}`;

  add(
    'Node CPU',
    DATASOURCE_UID.orchestrator,
    [{ expr: node('stack_node_cpu_percent'), legend: '{{worker}}' }],
    'percent',
  );
  add(
    'Node memory',
    DATASOURCE_UID.orchestrator,
    [{ expr: node('stack_node_memory_percent'), legend: '{{worker}}' }],
    'percent',
  );
  add(
    'Services running',
    DATASOURCE_UID.orchestrator,
    [{ expr: `stack_service_up{${stack}}`, legend: '{{service}}' }],
    'none',
  );
  add(
    'Restarts',
    DATASOURCE_UID.orchestrator,
    [{ expr: `stack_service_restarts{${stack}}`, legend: '{{service}}' }],
    'none',
  );
  add(
    'Health-check latency',
    DATASOURCE_UID.orchestrator,
    [{ expr: `stack_service_health_latency_seconds{${stack}}`, legend: '{{service}}' }],
    's',
  );
  if (input.scraped.length > 0) {
    add('Scrape targets up', DATASOURCE_UID.metrics, [{ expr: 'up', legend: '{{service}}' }], 'none');
    add(
      'Request rate',
      DATASOURCE_UID.metrics,
      [
        {
          expr: 'sum by (service) (rate({__name__=~".+_requests_total", __name__!~"promhttp_.+"}[5m]))',
          legend: '{{service}}',
        },
      ],
      'reqps',
    );
  }
  if (input.logs) add('Logs', DATASOURCE_UID.logs, [{ expr: `{${stack}}`, legend: '' }], '', 'logs');

  const dashboard = {
    uid: `so-${token('stack_id')}`,
    title: `Stack ${input.stack}`,
    tags: ['stack-orchestrator'],
    editable: false,
    schemaVersion: 39,
    version: 1,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    timezone: 'utc',
    panels,
    templating: { list: [] },
    annotations: { list: [] },
  };
  return `${JSON.stringify(dashboard, null, 2)}\n`;
}
