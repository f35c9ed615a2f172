import { describe, expect, it } from 'vitest';
import { at, invalid, service, valid } from '../../../../test/support/definitions.js';
import { toServiceSpec } from '../service-spec.js';

const stack = (serviceLines: string) => `name: shop
stackkit: basement-kit
services:
${serviceLines}`;

describe('validateDefinition: metrics', () => {
  it('reads port, path and interval, with /metrics and 15s as defaults; without the key there is none', () => {
    const result = valid(
      stack(`  web:
    command: [/bin/web]
    ports: [8080]
    metrics: { port: 9100, path: /custom/metrics, interval: 1m30s, x-note: anchors welcome }
  api:
    command: [/bin/api]
    metrics:
      port: 9200
  worker:
    command: [/bin/worker]
    metrics:
`),
    );
    expect(service(result, 'web').metrics).toEqual({
      port: 9100,
      path: '/custom/metrics',
      interval_ms: 90_000,
    });
    expect(service(result, 'api').metrics).toEqual({ port: 9200, path: '/metrics', interval_ms: 15_000 });
    expect(service(result, 'worker').metrics).toBeNull();
    expect(result.warnings).toEqual([]);
  });

  it('takes the interval bounds themselves: 1s and 1h', () => {
    const result = valid(
      stack(`  a:
    command: [/bin/a]
    metrics: { port: 1, interval: 1s }
  b:
    command: [/bin/b]
    metrics: { port: 65535, interval: 1h }
`),
    );
    expect(service(result, 'a').metrics?.interval_ms).toBe(1000);
    expect(service(result, 'b').metrics?.interval_ms).toBe(3_600_000);
  });

  it('refuses each bad field at its node, with its category, and warns about unknown keys', () => {
    const result = invalid(
      stack(`  a:
    command: [/bin/a]
    metrics: { port: 0, path: metrics, interval: 500ms, scheme: https }
  b:
    command: [/bin/b]
    metrics: { path: /metrics }
  c:
    command: [/bin/c]
    metrics: { port: "9100", path: "/with space", interval: 2h }
  d:
    command: [/bin/d]
    metrics: { port: 70000, path: 12, interval: 15 }
  e:
    command: [/bin/e]
    metrics: [9100]
  f:
    command: [/bin/f]
    metrics:
      port:
`),
    );
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['services.a.metrics.port', 'invalid_value', 6, 22],
      ['services.a.metrics.path', 'invalid_value', 6, 31],
      ['services.a.metrics.interval', 'invalid_value', 6, 50],
      ['services.b.metrics.port', 'missing_required_field', 9, 14],
      ['services.c.metrics.port', 'invalid_value', 12, 22],
      ['services.c.metrics.path', 'invalid_value', 12, 36],
      ['services.c.metrics.interval', 'invalid_value', 12, 61],
      ['services.d.metrics.port', 'invalid_value', 15, 22],
      ['services.d.metrics.path', 'invalid_value', 15, 35],
      ['services.d.metrics.interval', 'invalid_value', 15, 49],
      ['services.e.metrics', 'invalid_value', 18, 14],
      ['services.f.metrics.port', 'missing_required_field', 22, 7],
    ]);
    expect(at(result.errors, 'services.a.metrics.port').message).toBe(
      'ports are whole numbers from 1 to 65535',
    );
    expect(at(result.errors, 'services.a.metrics.path').message).toBe(
      'the metrics path starts with "/" and has no spaces',
    );
    expect(at(result.errors, 'services.a.metrics.interval').message).toContain('from 1s to 1h');
    expect(at(result.errors, 'services.b.metrics.port').message).toContain('metrics.port is required');
    expect(at(result.errors, 'services.e.metrics').message).toBe('metrics must be a mapping, not a list');
    expect(at(result.warnings, 'services.a.metrics.scheme').message).toBe('unknown key "scheme" is ignored');
  });
});

describe('what the agent is told to scrape', () => {
  it('a process on its own port; a container on the host port a TCP mapping publishes, else not at all', () => {
    const result = valid(
      stack(`  proc:
    command: [/bin/proc]
    metrics: { port: 9100, interval: 5s }
  published:
    image: prom/node-exporter:v1.8.2
    ports: ["19100:9100/udp", "29100:9100"]
    metrics: { port: 9100, path: /m }
  inside:
    image: prom/node-exporter:v1.8.2
    ports: ["8080:80"]
    metrics: { port: 9100 }
  none:
    command: [/bin/none]
`),
    );
    const spec = (name: string) => toServiceSpec(service(result, name)).metrics;
    expect(spec('proc')).toEqual({ port: 9100, path: '/metrics', interval_ms: 5000 });
    expect(spec('published')).toEqual({ port: 29100, path: '/m', interval_ms: 15_000 });
    expect(spec('inside')).toEqual({ port: 0, path: '/metrics', interval_ms: 15_000 });
    expect(spec('none')).toBeNull();
    // A revision stored before the field existed has no `metrics` key at all.
    const { metrics: _, ...old } = service(result, 'proc');
    expect(toServiceSpec(old as never).metrics).toBeNull();
  });
});
