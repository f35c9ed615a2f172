import { describe, expect, it } from 'vitest';
import { at, invalid, service, valid } from '../../../../test/support/definitions.js';

const stack = (serviceLines: string) => `name: shop
stackkit: cloud-kit
services:
${serviceLines}`;

describe('validateDefinition: metrics', () => {
  it('normalizes the block with its defaults; without it a service has no metrics field', () => {
    const result = valid(
      stack(`  web:
    image: nginx:1.27
    ports: ["8080:80"]
    metrics: {}
  api:
    command: [/bin/api]
    ports: [9000]
    metrics: { port: 9100, path: /internal/metrics, interval: 1m30s }
  db:
    image: postgres:17
    metrics: { port: 9187 }
  worker:
    command: [/bin/worker]
`),
    );
    // docker: the port the container listens on, reached on the stack's network.
    expect(service(result, 'web').metrics).toEqual({ port: 80, path: '/metrics', interval_ms: 15_000 });
    expect(service(result, 'api').metrics).toEqual({
      port: 9100,
      path: '/internal/metrics',
      interval_ms: 90_000,
    });
    expect(service(result, 'db').metrics).toEqual({ port: 9187, path: '/metrics', interval_ms: 15_000 });
    expect(service(result, 'worker')).not.toHaveProperty('metrics');
    expect(result.warnings).toEqual([]);
  });

  it('refuses a bad port, path or interval, a missing port and a block that is not a mapping', () => {
    const result = invalid(
      stack(`  a:
    command: [/bin/a]
    metrics: { port: 0 }
  b:
    command: [/bin/b]
    ports: [9000]
    metrics: { path: "metrics?x=1" }
  c:
    command: [/bin/c]
    ports: [9001]
    metrics: { interval: 500ms }
  d:
    command: [/bin/d]
    ports: [9002]
    metrics: { interval: "15" }
  e:
    command: [/bin/e]
    metrics: {}
  f:
    command: [/bin/f]
    metrics: yes
  g:
    command: [/bin/g]
    ports: [9003]
    metrics: { port: 9003, scheme: https }
`),
    );
    expect(at(result.errors, 'services.a.metrics.port').message).toMatch(/1 to 65535/);
    expect(at(result.errors, 'services.b.metrics.path').message).toMatch(/starts with "\/"/);
    expect(at(result.errors, 'services.c.metrics.interval').message).toMatch(/whole seconds from 1s to 1h/);
    expect(at(result.errors, 'services.d.metrics.interval').category).toBe('invalid_value');
    expect(at(result.errors, 'services.e.metrics.port').category).toBe('missing_required_field');
    expect(at(result.errors, 'services.f.metrics').category).toBe('invalid_value');
    expect(at(result.warnings, 'services.g.metrics.scheme').message).toMatch(/unknown/i);
  });
});
