import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';

const read = (file: string): string => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/** The deployment files cannot be built here (no Docker engine); their promises are pinned instead. */
describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');

  it('is multi-stage and runs as a non-root user', () => {
    expect(dockerfile.match(/^FROM /gm)?.length).toBeGreaterThanOrEqual(2);
    expect(dockerfile).toMatch(/^USER node$/m);
  });

  it("has the document's health check: failing HTTP request to /health/ready, 30s, 10s, 3 retries", () => {
    expect(dockerfile).toMatch(/^HEALTHCHECK --interval=30s --timeout=10s --retries=3 \\$/m);
    expect(dockerfile).toMatch(/CMD curl -fsS -o \/dev\/null http:\/\/127\.0\.0\.1:5260\/health\/ready/);
  });

  it('exposes the API and agent ports', () => {
    expect(dockerfile).toMatch(/^EXPOSE 5260 5263$/m);
  });
});

describe('docker-compose.yml', () => {
  interface Service {
    ports?: string[];
    depends_on?: Record<string, { condition: string }>;
    environment?: Record<string, string>;
    healthcheck?: { test: string[] };
  }
  const compose = load(read('docker-compose.yml')) as { services: Record<string, Service> };

  it('runs the service on 5260 and 5263 against PostgreSQL, after the database is healthy', () => {
    const svc = compose.services.orchestrator;
    expect(svc.ports).toEqual(['5260:5260', '5263:5263']);
    expect(svc.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(svc.environment?.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
    expect(compose.services.postgres.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(svc.healthcheck?.test.join(' ')).toContain('/health/ready');
  });
});
