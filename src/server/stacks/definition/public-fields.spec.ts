import { describe, expect, it } from 'vitest';
import { at, invalid, service, valid } from '../../../../test/support/definitions.js';

const stack = (name: string, serviceLines: string) => `name: ${name}
stackkit: cloud-kit
services:
${serviceLines}`;

describe('validateDefinition: public', () => {
  it('publishes a TCP host port the service declares, for both drivers; without the key nothing is public', () => {
    const result = valid(
      stack(
        'shop',
        `  web:
    image: nginx:1.27
    ports: ["8080:80", "5353:53/udp"]
    public: { port: 8080, x-note: anchors welcome }
  api:
    command: [/bin/api]
    ports: [{ container: 9000 }]
    public:
      port: 9000
  worker:
    command: [/bin/worker]
    public:
`,
      ),
    );
    expect(service(result, 'web').public).toEqual({ port: 8080 });
    expect(service(result, 'api').public).toEqual({ port: 9000 });
    expect(service(result, 'worker').public).toBeNull();
    expect(result.warnings).toEqual([]);
  });

  it('refuses unknown keys, a missing or out-of-range port and a port the service does not publish over TCP', () => {
    const result = invalid(
      stack(
        'shop',
        `  a:
    image: nginx:1.27
    ports: ["8080:80"]
    public: { port: 8080, auth: none }
  b:
    command: [/bin/b]
    ports: [9000]
    public: { port: 70000 }
  c:
    image: nginx:1.27
    ports: ["8081:80", "5353:53/udp"]
    public: { port: 80 }
  d:
    image: nginx:1.27
    ports: ["8082:80", "5354:53/udp"]
    public: { port: 5354 }
  e:
    command: [/bin/e]
    public: {}
  f:
    command: [/bin/f]
    ports: [9001]
    public: { port: "9001" }
  g:
    command: [/bin/g]
    public: true
`,
      ),
    );
    expect(result.errors.map((e) => [e.path, e.category, e.line, e.column])).toEqual([
      ['services.a.public.auth', 'invalid_value', 7, 27],
      ['services.b.public.port', 'invalid_value', 11, 21],
      ['services.c.public.port', 'invalid_value', 15, 21],
      ['services.d.public.port', 'invalid_value', 19, 21],
      ['services.e.public.port', 'missing_required_field', 22, 13],
      ['services.f.public.port', 'invalid_value', 26, 21],
      ['services.g.public', 'invalid_value', 29, 13],
    ]);
    expect(at(result.errors, 'services.a.public.auth').message).toBe(
      'unknown key "auth" under public: it takes only port',
    );
    expect(at(result.errors, 'services.b.public.port').message).toBe(
      'ports are whole numbers from 1 to 65535',
    );
    // The container port is not where the ingress connects: the node's published port is.
    expect(at(result.errors, 'services.c.public.port').message).toContain('TCP host port');
    expect(at(result.errors, 'services.e.public.port').message).toContain('public.port is required');
    expect(at(result.errors, 'services.g.public').message).toBe('public must be a mapping, not a boolean');
  });

  it('needs <service>-<stack> to fit one DNS label, and says which names to shorten', () => {
    const name = (n: number, letter: string) => letter.repeat(n);
    // 31 + 1 + 31 = 63: the longest label there is.
    const fits = valid(
      stack(
        name(31, 's'),
        `  ${name(31, 'w')}:\n    command: [/bin/w]\n    ports: [80]\n    public: { port: 80 }\n`,
      ),
    );
    expect(service(fits, name(31, 'w')).public).toEqual({ port: 80 });

    const long = invalid(
      stack(
        name(32, 's'),
        `  ${name(31, 'w')}:\n    command: [/bin/w]\n    ports: [80]\n    public: { port: 80 }\n`,
      ),
    );
    expect(long.errors).toEqual([
      {
        path: `services.${name(31, 'w')}.public`,
        category: 'invalid_value',
        message: `a public service is reached as <service>-<stack>.<base>, and "${name(31, 'w')}-${name(32, 's')}" has 64 characters where a DNS label holds at most 63: shorten the service or stack name`,
        line: 7,
        column: 13,
      },
    ]);
    // The same names are fine when the service is not public.
    valid(stack(name(32, 's'), `  ${name(31, 'w')}:\n    command: [/bin/w]\n    ports: [80]\n`));
  });

  it('leaves the label alone when the stack or service name is wrong already (reported once, at the name)', () => {
    const badStack = invalid(
      stack('Shop', `  web:\n    command: [/bin/w]\n    ports: [80]\n    public: { port: 80 }\n`),
    );
    expect(badStack.errors.map((e) => e.path)).toEqual(['name']);
    const badService = invalid(
      stack('shop', `  Web:\n    command: [/bin/w]\n    ports: [80]\n    public: { port: 80 }\n`),
    );
    expect(badService.errors.map((e) => [e.path, e.category])).toEqual([
      ['services.Web', 'invalid_service_name'],
    ]);
  });
});
