import { describe, expect, it } from 'vitest';
import { at, invalid, service, valid, variables, withEnv } from '../../../../test/support/definitions.js';
import {
  MAX_COMMAND_ARG_BYTES,
  MAX_ENV_NAME_BYTES,
  MAX_ENV_PER_SERVICE,
  MAX_ENV_VALUE_BYTES,
} from '../../../contracts/agent-protocol/limits.js';
import { serviceDigest } from '../service-spec.js';
import type { PortDefinition } from './definition.types.js';

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
      metrics: null,
      public: null,
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
});

describe('validateDefinition: categories and positions', () => {
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
});

describe('validateDefinition: size limits (what a job can carry to an agent)', () => {
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
});

describe('validateDefinition: the node address of a port', () => {
  it('reads "ADDRESS:host:container", "[IPv6]:host:container" and `address`; without one the port has none', () => {
    const result = valid(`name: s
stackkit: basement-kit
services:
  web:
    image: nginx:1.27
    ports: ["127.0.0.1:8080:80", "[::1]:5353:53/udp", { container: 443, host: 8443, address: 10.0.0.5 }, "9000:90"]
`);
    expect(service(result, 'web').ports).toEqual([
      { container: 80, host: 8080, protocol: 'tcp', address: '127.0.0.1' },
      { container: 53, host: 5353, protocol: 'udp', address: '::1' },
      { container: 443, host: 8443, protocol: 'tcp', address: '10.0.0.5' },
      { container: 90, host: 9000, protocol: 'tcp' },
    ]);
    expect(serviceDigest(service(result, 'web'))).not.toBe(
      serviceDigest({ ...service(result, 'web'), ports: service(result, 'web').ports.map(withoutAddress) }),
    );
  });

  it('refuses an address that is not an IP literal, and any address on a process service', () => {
    const result = invalid(`name: s
stackkit: basement-kit
services:
  a:
    image: nginx:1.27
    ports: ["300.1.1.1:8080:80", { container: 80, address: localhost }, "[zz]:1:1"]
  p:
    command: [run]
    ports: ["127.0.0.1:9000:9000"]
`);
    expect(result.errors.map((e) => [e.path, e.category])).toEqual([
      ['services.a.ports.0', 'invalid_value'],
      ['services.a.ports.1.address', 'invalid_value'],
      ['services.a.ports.2', 'invalid_value'],
      ['services.p.ports.0', 'invalid_value'],
    ]);
    expect(at(result.errors, 'services.p.ports.0').message).toContain('binds its own address');
  });
});

const withoutAddress = (p: PortDefinition): PortDefinition => ({
  container: p.container,
  host: p.host,
  protocol: p.protocol,
});
