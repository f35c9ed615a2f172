import { describe, expect, it } from 'vitest';
import { at, invalid, service, valid } from '../../../../test/support/definitions.js';
import { MAX_ISSUES } from './issues.js';

describe('validateDefinition: a valid file', () => {
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
