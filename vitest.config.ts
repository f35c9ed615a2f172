import { configDefaults, defineConfig } from 'vitest/config';

/**
 * E2E files that run in the postgres pass only. They need a real PostgreSQL server whatever TEST_DB
 * says (several service processes on one database; an embedded database belongs to one process),
 * so they create their database there themselves (createPostgresDatabase). The pglite pass leaves
 * them out instead of running the same thing a second time; nothing in them is skipped.
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
