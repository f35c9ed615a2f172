import { describe, expect, it } from 'vitest';
import {
  MAX_COMMAND_ARG_BYTES,
  MAX_ENV_NAME_BYTES,
  MAX_ENV_PER_SERVICE,
  MAX_ENV_VALUE_BYTES,
  MAX_STACK_SPEC_BYTES,
  stackSpecBytes,
} from '../../agent-protocol/limits.js';
import { toServiceSpec } from '../service-spec.js';
import type { ServiceDefinition, ValidationIssue, ValidationResult } from './definition.types.js';
import { MAX_ISSUES } from './issues.js';
import { validateDefinition } from './validate-definition.js';
import { YAML_LIMITS } from './yaml-tree.js';

const valid = (source: string) => {
  const result = validateDefinition(source);
  if (result.kind !== 'valid') throw new Error(`expected valid, got ${JSON.stringify(result, null, 2)}`);
  return result;
};

const invalid = (source: string) => {
  const result = validateDefinition(source);
  if (result.kind !== 'invalid') throw new Error(`expected invalid, got ${JSON.stringify(result, null, 2)}`);
  return result;
};

const yamlError = (source: string) => {
  const result = validateDefinition(source);
  if (result.kind !== 'yaml_error')
    throw new Error(`expected yaml_error, got ${JSON.stringify(result, null, 2)}`);
  return result.error;
};

/** The issue at a path (exactly one). */
const at = (issues: ValidationIssue[], path: string): ValidationIssue => {
  const found = issues.filter((i) => i.path === path);
  if (found.length !== 1)
    throw new Error(`expected one issue at ${path}, got ${JSON.stringify(issues, null, 2)}`);
  return found[0];
};

const service = (
  result: { definition: { services: ServiceDefinition[] } },
  name: string,
): ServiceDefinition => {
  const found = result.definition.services.find((s) => s.name === name);
  if (!found) throw new Error(`no service ${name}`);
  return found;
};

const names = (result: ValidationResult): string[] =>
  result.kind === 'valid' ? result.definition.services.map((s) => s.name) : [];

describe('validateDefinition: a valid file', () => {
  it('normalizes every field with its units and defaults', () => {
    const result = valid(`name: shop
stackkit: basement-kit
services:
  web:
    image: nginx:1.27
    command: ["nginx", "-g", "daemon off;"]
    ports: ["8080:80", "5353:53/udp", 9000, { container: 443, host: 8443 }]
    env:
      DB_PASSWORD: \${DB_PASSWORD}
      WORKERS: 4
      DEBUG: true
      RATIO: 1.50
      GREETING: "hello \${NAME}"
    resources: { cpu: 500m, memory: 1Gi }
    health_check: { path: /healthz, port: 8080, interval: 1m30s }
    placement: { labels: { zone: basement, tier: 1 } }
    restart: always
  worker:
    command: [/usr/local/bin/worker, --threads, 2]
    resources: { cpu: 1.5, memory: 268435456 }
`);
    expect(result.definition).toMatchObject({ name: 'shop', stackkit: 'basement-kit', variant: 'default' });
    expect(result.definition.monitoring).toEqual({
      enabled: false,
      metrics_store: null,
      dashboard: null,
      log_store: null,
    });
    expect(service(result, 'web')).toEqual({
      name: 'web',
      image: 'nginx:1.27',
      command: ['nginx', '-g', 'daemon off;'],
      env: {
        DB_PASSWORD: '${DB_PASSWORD}',
        WORKERS: '4',
        DEBUG: 'true',
        RATIO: '1.50',
        GREETING: 'hello ${NAME}',
      },
      ports: [
        { container: 80, host: 8080, protocol: 'tcp' },
        { container: 53, host: 5353, protocol: 'udp' },
        { container: 9000, host: 9000, protocol: 'tcp' },
        { container: 443, host: 8443, protocol: 'tcp' },
      ],
      resources: { cpu: 0.5, memory_bytes: 2 ** 30 },
      health_check: { path: '/healthz', port: 8080, interval_ms: 90_000 },
      depends_on: [],
      placement: { labels: { zone: 'basement', tier: '1' } },
      restart: 'always',
      driver: 'docker',
      origin: 'definition',
    });
    expect(service(result, 'worker')).toMatchObject({
      image: null,
      command: ['/usr/local/bin/worker', '--threads', '2'],
      driver: 'process',
      restart: 'on-failure',
      resources: { cpu: 1.5, memory_bytes: 268435456 },
      health_check: null,
    });
    // Only a whole-value reference is resolved by the agent; a partial one is passed on with a warning.
    expect(result.warnings).toEqual([
      {
        path: 'services.web.env.GREETING',
        category: 'invalid_value',
        message: expect.stringContaining('${NAME}') as string,
        line: 13,
        column: 17,
      },
    ]);
  });

  it('gives a service without resources the variant defaults, and explicit variants their own', () => {
    const source = (variant: string) =>
      `name: pi\nstackkit: basement-kit\nvariant: ${variant}\nservices:\n  app:\n    image: busybox\n`;
    expect(service(valid(source('default')), 'app').resources).toEqual({
      cpu: 0.25,
      memory_bytes: 256 * 2 ** 20,
    });
    expect(service(valid(source('minimal')), 'app').resources).toEqual({
      cpu: 0.1,
      memory_bytes: 128 * 2 ** 20,
    });
  });

  it('defaults a health check to path / on the first port every 10s', () => {
    const result = valid(`name: s
stackkit: cloud-kit
services:
  api:
    image: ghcr.io/acme/api:2.1
    ports: ["8081:8080"]
    health_check: {}
`);
    expect(service(result, 'api').health_check).toEqual({ path: '/', port: 8081, interval_ms: 10_000 });
  });

  it('accepts anchors, aliases and merge keys, and ignores x- extension keys', () => {
    const result = valid(`x-common: &common
  image: nginx:1.27
  restart: never
  env: &env { MODE: prod }
name: s
stackkit: modern-homelab
services:
  a:
    <<: *common
    restart: always
  b:
    <<: *common
    env: *env
`);
    expect(service(result, 'a')).toMatchObject({
      image: 'nginx:1.27',
      restart: 'always',
      env: { MODE: 'prod' },
    });
    expect(service(result, 'b')).toMatchObject({
      image: 'nginx:1.27',
      restart: 'never',
      env: { MODE: 'prod' },
    });
    expect(result.warnings).toEqual([]);
  });

  it('warns about unknown keys without failing, so files stay forward compatible', () => {
    const result = valid(`name: s
stackkit: cloud-kit
replicas: 3
services:
  a:
    image: nginx
    scale: 2
`);
    expect(result.warnings).toEqual([
      {
        path: 'replicas',
        category: 'invalid_value',
        message: 'unknown key "replicas" is ignored',
        line: 3,
        column: 1,
      },
      {
        path: 'services.a.scale',
        category: 'invalid_value',
        message: 'unknown key "scale" is ignored',
        line: 7,
        column: 5,
      },
    ]);
  });
});

describe('validateDefinition: dependency order', () => {
  it('lists services after their dependencies, ties by name', () => {
    const result = valid(`name: s
stackkit: cloud-kit
services:
  web: { image: nginx, depends_on: [api, cache] }
  api: { image: api, depends_on: [db] }
  zeta: { image: z }
  cache: { image: redis }
  db: { image: postgres }
  alpha: { image: a, depends_on: [web] }
`);
    expect(names(result)).toEqual(['cache', 'db', 'api', 'web', 'alpha', 'zeta']);
    expect(service(result, 'web').depends_on).toEqual(['api', 'cache']);
  });

  it('reports a cycle once, at the dependency that closes it, and a self-dependency', () => {
    const result = invalid(`name: s
stackkit: cloud-kit
services:
  a: { image: a, depends_on: [b] }
  b: { image: b, depends_on: [c] }
  c: { image: c, depends_on: [a] }
  d: { image: d, depends_on: [d] }
`);
    expect(result.errors).toEqual([
      {
        path: 'services.c.depends_on.0',
        category: 'invalid_value',
        message: 'dependency cycle: a → b → c → a',
        line: 6,
        column: 31,
      },
      {
        path: 'services.d.depends_on.0',
        category: 'invalid_value',
        message: 'service d cannot depend on itself',
        line: 7,
        column: 31,
      },
    ]);
  });

  it('refuses a dependency on a service the stack does not have', () => {
    const result = invalid(`name: s
stackkit: cloud-kit
services:
  a: { image: a, depends_on: [ghost] }
`);
    expect(at(result.errors, 'services.a.depends_on.0')).toMatchObject({
      category: 'invalid_value',
      line: 4,
      column: 31,
    });
  });
});

describe('validateDefinition: categories and positions', () => {
  it('missing_required_field: at the parent mapping, or at the key when the value is empty', () => {
    const result = invalid(`# a comment first
stackkit: cloud-kit
name:
services:
  web:
    ports: [80]
  job:
`);
    expect(result.errors).toEqual([
      {
        path: 'name',
        category: 'missing_required_field',
        message: expect.stringContaining('name is required') as string,
        line: 3,
        column: 1,
      },
      {
        path: 'services.web.image',
        category: 'missing_required_field',
        message: expect.stringContaining('needs image') as string,
        line: 6,
        column: 5,
      },
      {
        path: 'services.job.image',
        category: 'missing_required_field',
        message: expect.stringContaining('needs image') as string,
        line: 7,
        column: 3,
      },
    ]);
    const empty = invalid('# nothing but a comment\n');
    expect(empty.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['name', 'missing_required_field', 1, 1],
      ['stackkit', 'missing_required_field', 1, 1],
      ['services', 'missing_required_field', 1, 1],
    ]);
  });

  it('invalid_service_name: at the name, for bad labels and names the monitoring stack takes', () => {
    const result = invalid(`name: s
stackkit: cloud-kit
services:
  Web_1: { image: nginx }
  -lead: { image: nginx }
  ${'a'.repeat(64)}: { image: nginx }
  dashboard: { image: nginx }
monitoring:
  enabled: true
  dashboard:
    admin_password: \${GF_PASSWORD}
`);
    expect(result.errors.map((e) => [e.path.slice(0, 20), e.category, e.line, e.column])).toEqual([
      ['services.Web_1', 'invalid_service_name', 4, 3],
      ['services.-lead', 'invalid_service_name', 5, 3],
      [`services.${'a'.repeat(11)}`, 'invalid_service_name', 6, 3],
      ['services.dashboard', 'invalid_service_name', 7, 3],
    ]);
    expect(at(result.errors, 'services.dashboard').message).toContain('monitoring');
  });

  it('unsupported_stackkit: lists the supported kits, and a kit’s variants', () => {
    const kit = invalid('name: s\nstackkit: kubernetes-kit\nservices: { a: { image: x } }\n');
    expect(kit.errors).toEqual([
      {
        path: 'stackkit',
        category: 'unsupported_stackkit',
        message:
          'stack kit "kubernetes-kit" is not supported; supported stack kits: basement-kit, cloud-kit, modern-homelab',
        line: 2,
        column: 11,
      },
    ]);
    const variant = invalid(
      'name: s\nstackkit: basement-kit\nvariant: huge\nservices: { a: { image: x } }\n',
    );
    expect(variant.errors).toEqual([
      {
        path: 'variant',
        category: 'unsupported_stackkit',
        message: 'stack kit basement-kit has no variant "huge"; its variants: default, minimal',
        line: 3,
        column: 10,
      },
    ]);
  });

  it('resource_constraint: per service, per stack, ports and monitoring against the variant', () => {
    const result = invalid(`name: s
stackkit: basement-kit
variant: minimal
services:
  a: { image: x, ports: ["8080:80"], resources: { cpu: 2, memory: 1.5Gi } }
  b: { image: x, ports: ["8080:81", "8080:81/udp"], resources: { cpu: 1, memory: 1Gi } }
  c: { image: x }
  d: { image: x }
  e: { image: x }
  f: { image: x }
monitoring:
  enabled: true
`);
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['services', 'resource_constraint', 5, 3],
      ['services', 'resource_constraint', 5, 3],
      ['services', 'resource_constraint', 5, 3],
      ['services.a.resources.cpu', 'resource_constraint', 5, 56],
      ['services.a.resources.memory', 'resource_constraint', 5, 67],
      ['services.b.ports.0', 'resource_constraint', 6, 26],
      // Still a real error should the variant change; reported in the same pass.
      ['monitoring.dashboard.admin_password', 'missing_required_field', 12, 3],
      ['monitoring.enabled', 'resource_constraint', 12, 12],
    ]);
    const messages = result.errors.map((e) => e.message);
    expect(messages).toContain('the stack has 6 services; variant basement-kit/minimal allows 5');
    expect(messages).toContain(
      'the services request 3.4 cores in total; variant basement-kit/minimal allows 2 cores',
    );
    expect(messages).toContain(
      'the services request 3Gi of memory in total; variant basement-kit/minimal allows 2Gi',
    );
    expect(at(result.errors, 'services.a.resources.cpu').message).toBe(
      'cpu 2 cores exceeds the 1 core a service may have in variant basement-kit/minimal',
    );
    expect(at(result.errors, 'services.b.ports.0').message).toBe(
      'host port 8080/tcp is already used by service a',
    );
    expect(at(result.errors, 'monitoring.enabled').message).toBe(
      'variant basement-kit/minimal does not allow the monitoring stack',
    );
  });

  it('resource_constraint: a user port that collides with a monitoring service', () => {
    const result = invalid(`name: s
stackkit: cloud-kit
services:
  app: { image: x, ports: ["3000:3000"] }
monitoring: { enabled: true, dashboard: { admin_password: "\${P}" } }
`);
    expect(result.errors).toEqual([
      {
        path: 'services.app.ports.0',
        category: 'resource_constraint',
        message: 'host port 3000/tcp is already used by service dashboard (monitoring)',
        line: 4,
        column: 28,
      },
    ]);
  });

  it('invalid_value: types, formats and ranges, each at its node', () => {
    const result = invalid(`name: s
stackkit: cloud-kit
services:
  a:
    image: "not an image"
    ports: [0, "70000:80", "80/sctp", { host: 8080 }, { container: 99999 }]
    env: { 1BAD: x, EMPTY: , LIST: [1] }
    resources: { cpu: lots, memory: 12XB }
    health_check: { path: healthz, port: 8080, interval: 10 }
    restart: sometimes
    placement: { labels: { Zone: x } }
  b:
    command: run.sh --fast
  c:
    command: []
  d:
    command: [run, null]
    ports: ["8080:80"]
`);
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['services.a.image', 'invalid_value', 5, 12],
      ['services.a.ports.0', 'invalid_value', 6, 13],
      ['services.a.ports.1', 'invalid_value', 6, 16],
      ['services.a.ports.2', 'invalid_value', 6, 28],
      ['services.a.ports.3.container', 'missing_required_field', 6, 39],
      ['services.a.ports.4.container', 'invalid_value', 6, 68],
      ['services.a.env.1BAD', 'invalid_value', 7, 12],
      ['services.a.env.EMPTY', 'invalid_value', 7, 21],
      ['services.a.env.LIST', 'invalid_value', 7, 36],
      ['services.a.resources.cpu', 'invalid_value', 8, 23],
      ['services.a.resources.memory', 'invalid_value', 8, 37],
      ['services.a.health_check.path', 'invalid_value', 9, 27],
      ['services.a.health_check.port', 'invalid_value', 9, 42],
      ['services.a.health_check.interval', 'invalid_value', 9, 58],
      ['services.a.restart', 'invalid_value', 10, 14],
      ['services.a.placement.labels.Zone', 'invalid_value', 11, 28],
      ['services.b.command', 'invalid_value', 13, 14],
      ['services.c.command', 'invalid_value', 15, 14],
      ['services.d.command.1', 'invalid_value', 17, 20],
      ['services.d.ports.0', 'invalid_value', 18, 13],
    ]);
    // A process listens on the node: its host port is its own port.
    expect(at(result.errors, 'services.d.ports.0').message).toContain('host port must equal');
  });

  it('reports every problem of a file in one pass, sorted by position', () => {
    const result = invalid(`name: My Stack
stackkit: cloud-kit
services:
  Bad_Name: { image: nginx }
  nothing: {}
  big: { image: x, resources: { memory: 100Gi } }
  oops: { image: x, restart: maybe }
`);
    expect(result.errors.map((e) => e.category)).toEqual([
      'invalid_value',
      'invalid_service_name',
      'missing_required_field',
      'resource_constraint',
      'invalid_value',
    ]);
    expect(result.errors.map((e) => e.line)).toEqual([1, 4, 5, 6, 7]);
    const kit = invalid(`name: s\nstackkit: nope\nservices:\n  Bad: {}\n`);
    expect(kit.errors.map((e) => e.category)).toEqual([
      'unsupported_stackkit',
      'invalid_service_name',
      'missing_required_field',
    ]);
  });

  it('refuses a root that is not a mapping, and services that are not one', () => {
    expect(invalid('- a\n- b\n').errors).toEqual([
      {
        path: '',
        category: 'invalid_value',
        message: 'a stack definition is a mapping with name, stackkit and services, not a list',
        line: 1,
        column: 1,
      },
    ]);
    expect(at(invalid('name: s\nstackkit: cloud-kit\nservices: [a, b]\n').errors, 'services')).toMatchObject({
      category: 'invalid_value',
      line: 3,
      column: 11,
    });
    expect(at(invalid('name: s\nstackkit: cloud-kit\nservices: {}\n').errors, 'services').message).toBe(
      'services must define at least one service',
    );
  });

  it('caps the number of reported errors', () => {
    const services = Array.from(
      { length: MAX_ISSUES + 50 },
      (_, i) => `  s${i}: { image: x, restart: maybe }`,
    );
    const result = invalid(`name: s\nstackkit: cloud-kit\nservices:\n${services.join('\n')}\n`);
    // Every service has a bad restart, and the stack has too many services: one more error.
    expect(result.errors).toHaveLength(MAX_ISSUES + 1);
    expect(result.errors.at(-1)).toEqual({
      path: '',
      category: 'invalid_value',
      message: '51 more errors not listed; fix the ones above first',
      line: null,
      column: null,
    });
  });
});

describe('validateDefinition: monitoring', () => {
  const base = `name: s
stackkit: cloud-kit
services:
  app: { image: x }
`;

  it('appends the catalogue’s monitoring services, filled in from the file', () => {
    const result = valid(`${base}monitoring:
  enabled: true
  metrics_store: { retention: 30d, storage: 20Gi }
  dashboard:
    enabled: true
    admin_password: \${GRAFANA_ADMIN_PASSWORD}
  log_store: { enabled: true, retention: 14d }
`);
    expect(result.definition.monitoring).toEqual({
      enabled: true,
      metrics_store: { retention_days: 30, storage_bytes: 20 * 2 ** 30 },
      dashboard: { enabled: true, admin_password_env: 'GRAFANA_ADMIN_PASSWORD' },
      log_store: { enabled: true, retention_days: 14 },
    });
    expect(names(result)).toEqual(['app', 'log-store', 'metrics-store', 'dashboard']);
    const metrics = service(result, 'metrics-store');
    expect(metrics).toMatchObject({ origin: 'monitoring', driver: 'docker', restart: 'always' });
    expect(metrics.image).toMatch(/^prom\/prometheus:/);
    expect(metrics.command).toContain('--storage.tsdb.retention.time=30d');
    expect(metrics.command).toContain('--storage.tsdb.retention.size=20GB');
    const dashboard = service(result, 'dashboard');
    expect(dashboard.image).toMatch(/^grafana\/grafana:/);
    expect(dashboard.env.GF_SECURITY_ADMIN_PASSWORD).toBe('${GRAFANA_ADMIN_PASSWORD}');
    expect(dashboard.depends_on).toEqual(['metrics-store', 'log-store']);
    const logs = service(result, 'log-store');
    expect(logs.image).toMatch(/^grafana\/loki:/);
    expect(logs.command).toContain('-store.retention=14d');
    expect(service(result, 'app').origin).toBe('definition');
  });

  it('uses the catalogue defaults and leaves out disabled parts', () => {
    const result = valid(`${base}monitoring:
  enabled: true
  dashboard: { enabled: false }
  log_store: { enabled: false }
`);
    expect(names(result)).toEqual(['app', 'metrics-store']);
    expect(service(result, 'metrics-store').command).toContain('--storage.tsdb.retention.time=15d');
    expect(result.definition.monitoring.metrics_store).toEqual({
      retention_days: 15,
      storage_bytes: 10 * 2 ** 30,
    });
  });

  it('adds nothing when monitoring is off', () => {
    expect(names(valid(`${base}monitoring: { enabled: false }\n`))).toEqual(['app']);
  });

  it('checks retention, storage and flags', () => {
    const result = invalid(`${base}monitoring:
  enabled: yes
  metrics_store: { retention: 2w, storage: 10GB }
  dashboard: { admin_password: "\${P}" }
  log_store: { retention: 7 }
`);
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['monitoring.enabled', 'invalid_value', 6, 12],
      ['monitoring.metrics_store.retention', 'invalid_value', 7, 31],
      ['monitoring.metrics_store.storage', 'invalid_value', 7, 44],
      ['monitoring.log_store.retention', 'invalid_value', 9, 27],
    ]);
  });

  it('requires the dashboard password when the dashboard runs', () => {
    const result = invalid(`${base}monitoring:\n  enabled: true\n`);
    expect(result.errors).toEqual([
      {
        path: 'monitoring.dashboard.admin_password',
        category: 'missing_required_field',
        message: expect.stringContaining('${GRAFANA_ADMIN_PASSWORD}') as string,
        line: 6,
        column: 3,
      },
    ]);
  });

  it('refuses a literal admin password without ever repeating it', () => {
    for (const literal of ['hunter2-Secret!', '"${NOT A REF}"', '12345678']) {
      const source = `${base}monitoring:
  enabled: false
  dashboard:
    admin_password: ${literal}
`;
      const result = invalid(source);
      expect(result.errors).toEqual([
        {
          path: 'monitoring.dashboard.admin_password',
          category: 'invalid_value',
          message: expect.stringContaining('environment reference') as string,
          line: 8,
          column: 21,
        },
      ]);
      const text = JSON.stringify(result);
      expect(text).not.toContain(literal.replace(/"/g, ''));
      expect(text).not.toContain('hunter2');
    }
  });
});

describe('validateDefinition: size limits (what a job can carry to an agent)', () => {
  /** One process service `app` with these environment lines (after `env:`, at line 7). */
  const withEnv = (envLines: string[], command = '[/bin/app]') =>
    `name: big\nstackkit: basement-kit\nservices:\n  app:\n    command: ${command}\n    env:\n${envLines.map((l) => `      ${l}\n`).join('')}`;
  /** `count` variables V0, V1, ... of `size` bytes each, the last one `extra` bytes longer. */
  const variables = (count: number, size: number, extra = 0) =>
    Array.from({ length: count }, (_, i) => `V${i}: "${'x'.repeat(size + (i === count - 1 ? extra : 0))}"`);
  const specBytes = (source: string) => stackSpecBytes(valid(source).definition.services.map(toServiceSpec));

  it('takes as many variables as the limit allows, and refuses the first one past it, once', () => {
    expect(Object.keys(service(valid(withEnv(variables(MAX_ENV_PER_SERVICE, 1))), 'app').env)).toHaveLength(
      MAX_ENV_PER_SERVICE,
    );
    const result = invalid(withEnv(variables(MAX_ENV_PER_SERVICE + 5, 1)));
    expect(result.errors).toEqual([
      {
        path: `services.app.env.V${MAX_ENV_PER_SERVICE}`,
        category: 'resource_constraint',
        message: `a service may have at most ${MAX_ENV_PER_SERVICE} environment variables; this is variable ${MAX_ENV_PER_SERVICE + 1} of ${MAX_ENV_PER_SERVICE + 5}`,
        line: 7 + MAX_ENV_PER_SERVICE,
        column: 7,
      },
    ]);
  });

  it('bounds names and values in UTF-8 bytes, at the offending node, without repeating the value', () => {
    const name = 'N'.repeat(MAX_ENV_NAME_BYTES);
    const value = 'v'.repeat(MAX_ENV_VALUE_BYTES);
    expect(service(valid(withEnv([`${name}: x`, `BIG: "${value}"`])), 'app').env.BIG).toBe(value);

    // "é" is two bytes: fewer characters than the limit, more bytes.
    const accents = 'é'.repeat(MAX_ENV_VALUE_BYTES / 2 + 1);
    const result = invalid(withEnv([`${name}N: x`, `BIG: "${value}x"`, `ACCENTS: ${accents}`]));
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      [`services.app.env.${name}N`, 'resource_constraint', 7, 7],
      ['services.app.env.BIG', 'resource_constraint', 8, 12],
      ['services.app.env.ACCENTS', 'resource_constraint', 9, 16],
    ]);
    expect(result.errors[0].message).toBe(
      `environment variable names are at most ${MAX_ENV_NAME_BYTES} bytes; this one has ${MAX_ENV_NAME_BYTES + 1}`,
    );
    expect(result.errors[1].message).toBe(
      `an environment value may take at most ${MAX_ENV_VALUE_BYTES} bytes (UTF-8); this one takes ${MAX_ENV_VALUE_BYTES + 1}`,
    );
    expect(result.errors[2].message).toContain(`this one takes ${MAX_ENV_VALUE_BYTES + 2}`);
    for (const e of result.errors) expect(e.message).not.toContain('vvvv');
  });

  it('bounds each command argument the same way', () => {
    const arg = 'a'.repeat(MAX_COMMAND_ARG_BYTES);
    expect(service(valid(withEnv([], `[/bin/app, "${arg}"]`)), 'app').command[1]).toBe(arg);
    const result = invalid(withEnv([], `[/bin/app, "${arg}a"]`));
    expect(result.errors).toEqual([
      {
        path: 'services.app.command.1',
        category: 'resource_constraint',
        message: `an argument may take at most ${MAX_COMMAND_ARG_BYTES} bytes (UTF-8); this one takes ${MAX_COMMAND_ARG_BYTES + 1}`,
        line: 5,
        column: 25,
      },
    ]);
  });

  it('accepts a stack that takes exactly the spec budget and refuses one byte more, at services', () => {
    // The largest stack the limits allow: every variable a service may have, filled to the budget.
    const base = variables(MAX_ENV_PER_SERVICE, 500);
    const pad = MAX_STACK_SPEC_BYTES - specBytes(withEnv(base));
    const largest = withEnv(variables(MAX_ENV_PER_SERVICE, 500, pad));
    expect(specBytes(largest)).toBe(MAX_STACK_SPEC_BYTES);

    const result = invalid(withEnv(variables(MAX_ENV_PER_SERVICE, 500, pad + 1)));
    expect(result.errors).toEqual([
      {
        path: 'services',
        category: 'resource_constraint',
        message: `the services take ${MAX_STACK_SPEC_BYTES + 1} bytes as a job sends them to an agent (the largest, app, ${MAX_STACK_SPEC_BYTES + 1}); a stack may take at most ${MAX_STACK_SPEC_BYTES}: make environment values or commands smaller, or split the stack`,
        line: 4,
        column: 3,
      },
    ]);
  });

  it('counts the definition as expanded: aliases cannot carry more than the budget', () => {
    const big = 'x'.repeat(60_000);
    const services = Array.from({ length: 10 }, (_, i) => `  s${i}: { command: [/bin/app], env: *env }`);
    const source = `name: big\nstackkit: basement-kit\nx-env: &env { BIG: "${big}" }\nservices:\n${services.join('\n')}\n`;
    expect(source.length).toBeLessThan(MAX_STACK_SPEC_BYTES / 8);
    const result = invalid(source);
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['services', 'resource_constraint', 5, 3],
    ]);
    expect(result.errors[0].message).toMatch(/^the services take 60\d{4} bytes/);
  });
});

describe('validateDefinition: unsafe or broken YAML', () => {
  it('reports a syntax error with its 1-based line and column', () => {
    expect(yamlError('name: s\nservices: [a, b\nstackkit: x\n')).toEqual({
      message: expect.any(String) as string,
      line: 3,
      column: 1,
    });
    expect(yamlError('name: s\n  bad: indent\n')).toMatchObject({ line: 2, column: 6 });
    expect(yamlError('name: "open\n')).toMatchObject({ line: 2 });
  });

  it('refuses duplicate keys, at the second one', () => {
    expect(yamlError('name: a\nstackkit: cloud-kit\nname: b\n')).toEqual({
      message: 'duplicate key "name"',
      line: 3,
      column: 1,
    });
  });

  it('refuses custom and language tags instead of running them', () => {
    expect(yamlError('name: !!js/function "function () { return 1 }"\n')).toEqual({
      message: 'unknown tag !!js/function',
      line: 1,
      column: 7,
    });
    expect(yamlError('services:\n  a: !!python/object:os.system [ls]\n')).toMatchObject({
      message: 'unknown tag !!python/object:os.system',
      line: 2,
      column: 6,
    });
    expect(yamlError('name: !env HOME\n')).toMatchObject({ message: 'unknown tag !env', line: 1, column: 7 });
    expect(yamlError('%TAG !! tag:evil.example,2026:\n---\nname: !!str x\n')).toMatchObject({
      message: '%TAG directives are not supported',
    });
    // The standard tags keep working.
    const result = valid(
      'name: !!str s\nstackkit: cloud-kit\nservices: !!map\n  a: { image: x, ports: [!!int "8080"] }\n',
    );
    expect(service(result, 'a').ports[0].host).toBe(8080);
  });

  it('stops an alias bomb at the expansion bound, without expanding it', () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let level = 1; level < 9; level++) {
      const prev = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const error = yamlError(lines.join('\n'));
    expect(error.message).toBe(`aliases expand the document beyond ${YAML_LIMITS.maxNodes} nodes`);
    // Line 6 (`f`) stands for ~9^6 nodes: the bound is crossed among its aliases, long before line 9.
    expect(error.line).toBe(6);
  });

  it('refuses aliases of unknown anchors and nesting deeper than the bound', () => {
    expect(yamlError('name: *nowhere\n')).toEqual({ message: 'unknown alias *nowhere', line: 1, column: 7 });
    const deep = `x: ${'['.repeat(YAML_LIMITS.maxDepth + 1)}${']'.repeat(YAML_LIMITS.maxDepth + 1)}\n`;
    expect(yamlError(deep).message).toMatch(/depth|nesting/i);
    // An alias may not take a deep anchor deeper.
    const nested = `a: &a ${'['.repeat(40)}${']'.repeat(40)}\nb: ${'['.repeat(30)}*a${']'.repeat(30)}\n`;
    expect(yamlError(nested).message).toBe(`the alias nests deeper than ${YAML_LIMITS.maxDepth} levels`);
  });

  it('counts lines and columns the way an editor shows them (CRLF, byte-order mark)', () => {
    const crlf = invalid('name: s\r\nstackkit: nope\r\nservices:\r\n  a: { image: x }\r\n');
    expect(crlf.errors.map((e) => [e.path, e.line, e.column])).toEqual([['stackkit', 2, 11]]);
    const bom = invalid('\uFEFFname: Shop\nstackkit: cloud-kit\nservices:\n  a: { image: x }\n');
    expect(bom.errors.map((e) => [e.path, e.line, e.column])).toEqual([['name', 1, 7]]);
  });

  it('refuses a source longer than the size bound', () => {
    const error = yamlError(`name: s\n# ${'x'.repeat(YAML_LIMITS.maxChars)}\n`);
    expect(error).toEqual({
      message: `the document is larger than ${YAML_LIMITS.maxChars} characters`,
      line: 1,
      column: 1,
    });
  });

  it('refuses more than one document', () => {
    expect(yamlError('name: a\n---\nname: b\n')).toEqual({
      message: 'a stack definition is a single YAML document; remove the second one',
      line: 3,
      column: 1,
    });
  });
});
