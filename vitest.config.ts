import { configDefaults, defineConfig } from 'vitest/config';

/**
 * E2E files that run in the postgres pass only; the pglite pass leaves them out instead of running
 * the same thing a second time, and nothing in them is skipped. Most need a real PostgreSQL server
 * whatever TEST_DB says (several service processes on one database; an embedded database belongs
 * to one process), so they create their database there themselves (createPostgresDatabase). The
 * rest are slow and about something other than the database underneath (a browser, a real
 * Prometheus, stackctl, the docker driver), whose server side the other files cover on both.
 */
const POSTGRES_ONLY = [
  // Three replicas, agents and a deploy storm with a replica killed: slow, and about several
  // processes on one shared PostgreSQL, which the embedded database cannot be.
  'test/e2e/replicas.e2e-spec.ts',
  'test/e2e/tunnel-replicas.e2e-spec.ts',
  'test/e2e/metric-replicas.e2e-spec.ts',
  'test/e2e/agent-replicas.e2e-spec.ts',
  'test/e2e/auth-token-cache-replicas.e2e-spec.ts',
  'test/e2e/storm-grace-replicas.e2e-spec.ts',
  // Holds a lock on a table from a second session while agents say hello: the embedded database
  // is one session.
  'test/e2e/agent-hellos-gathered.e2e-spec.ts',
  // The service against a real Prometheus over HTTP (PromQL and the store end to end): about the
  // query path more than the database underneath, so it runs once per full test run.
  'test/e2e/promql-differential.e2e-spec.ts',
  // A real Prometheus scraping and remote-writing to us, then promtool: slow (Prometheus waits
  // about 5 s before its first scrape) and about the HTTP surface, not the database underneath,
  // so it runs once per full run.
  'test/e2e/metric-prometheus.e2e-spec.ts',
  // A service whose event loop stalls under a real agent: about the event loop, not the database.
  'test/e2e/worker-silence.e2e-spec.ts',
  // stackctl run as the built program against the service: about the CLI, over HTTP (the
  // routes it calls run on both databases in the other files). 110 s of the pglite pass's worker
  // time on a fast day (docs/benchmarks.md, "CI time").
  'test/e2e/cli.e2e-spec.ts',
  'test/e2e/cli-stacks.e2e-spec.ts',
  'test/e2e/cli-tunnel.e2e-spec.ts',
  'test/e2e/cli-mcp.e2e-spec.ts',
  'test/e2e/cli-mcp-tokens.e2e-spec.ts',
  // The docker driver against podman's Docker Engine API: about the agent's driver; the jobs and
  // stacks around it run with the process driver on both databases. 65 s of the pglite pass.
  'test/e2e/docker-driver.e2e-spec.ts',
  'test/e2e/stacks-docker.e2e-spec.ts',
  'test/e2e/reconcile-drivers.e2e-spec.ts',
  // The same driver's volumes, container options, command checks and start conditions: the
  // Compose stacks that use them run on both databases (compose-stacks-docker.e2e).
  'test/e2e/docker-volumes.e2e-spec.ts',
  'test/e2e/docker-health-conditions.e2e-spec.ts',
  // Waits out the reconnect storm's margin (45 s) twice: 71 s, mostly asleep, about the agent
  // port's admission; the lease marker it reads is covered on both databases by leases.e2e.
  'test/e2e/storm-grace.e2e-spec.ts',
  // The web console in a real browser (chromium): a slow suite about the UI, not the database
  // underneath, so it runs once per full run.
  'test/e2e/console.e2e-spec.ts',
];
const pass = process.env.TEST_DB ?? 'pglite';

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.spec.ts', 'test/unit/**/*.spec.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e-spec.ts'],
          exclude: [...configDefaults.exclude, ...(pass === 'postgres' ? [] : POSTGRES_ONLY)],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          // Every JSON answer of an in-process app is checked against the OpenAPI document.
          setupFiles: ['test/support/openapi-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          pool: 'forks',
          maxWorkers: 2,
        },
      },
    ],
  },
});
