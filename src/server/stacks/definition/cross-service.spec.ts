import { describe, expect, it } from 'vitest';
import {
  at,
  invalid,
  names,
  service,
  specBytes,
  valid,
  variables,
  withEnv,
} from '../../../../test/support/definitions.js';
import { MAX_ENV_PER_SERVICE, MAX_STACK_SPEC_BYTES } from '../../../contracts/agent-protocol/limits.js';

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
});

describe('validateDefinition: size limits (what a job can carry to an agent)', () => {
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
