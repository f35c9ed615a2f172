/**
 * Where the generated files go in the monitoring containers, and the values filled in at deploy.
 * The catalogue's commands name the same paths (a test holds them together).
 */
export const PATHS = {
  prometheusConfig: '/etc/prometheus/stack/prometheus.yml',
  prometheusPassword: '/etc/prometheus/stack/orchestrator-password',
  lokiConfig: '/etc/loki/stack/loki.yaml',
  grafanaDatasources: '/etc/grafana/provisioning/datasources/stack.yaml',
  grafanaDashboards: '/etc/grafana/provisioning/dashboards/stack.yaml',
  grafanaDashboardDir: '/etc/grafana/stack/dashboards',
  grafanaPassword: '/etc/grafana/stack/orchestrator-password',
} as const;

/** Read by the software in the container (not root): world-readable, in a container of its own. */
export const CONFIG_MODE = 0o644;
export const CREDENTIAL_MODE = 0o444;

/**
 * The deploy-time values a generated file may hold, as `{{name}}` tokens in the definition's text:
 * a revision does not know them (the stack's id before it exists, PUBLIC_URL, the stack's OAuth
 * clients), and a digest must not change with them.
 */
export const DEPLOY_TOKENS = [
  'orchestrator_url',
  'stack_id',
  'metrics_writer_id',
  'metrics_reader_id',
] as const;
export type DeployToken = (typeof DEPLOY_TOKENS)[number];
export const token = (name: DeployToken): string => `{{${name}}}`;
