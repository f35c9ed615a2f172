import { describe, expect, it } from 'vitest';
import { Issues } from '../definition/issues.js';
import { parseYamlTree } from '../definition/yaml-tree.js';
import { checkComposeSchema, toPlain } from './compose-schema.js';

const check = (yaml: string) => {
  const issues = new Issues();
  const valid = checkComposeSchema(parseYamlTree(yaml)!, issues);
  return { valid, errors: issues.errors, warnings: issues.warnings };
};

const POSTGRES = `
name: db
services:
  postgres:
    image: postgres:17
    restart: unless-stopped
    environment:
      POSTGRES_USER: app
      POSTGRES_PASSWORD: \${POSTGRES_PASSWORD:?set it}
      POSTGRES_DB: app
    volumes:
      - pgdata:/var/lib/postgresql/data
      - type: bind
        source: ./init
        target: /docker-entrypoint-initdb.d
        read_only: true
    ports:
      - "5432:5432"
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U app"]
      interval: 10s
      timeout: 5s
      retries: 5
      start_period: 30s
    deploy:
      resources:
        limits:
          cpus: "1.5"
          memory: 1g
volumes:
  pgdata: {}
`;

const WORDPRESS = `
services:
  db:
    image: mysql:8.4
    command: --default-authentication-plugin=mysql_native_password
    volumes:
      - db_data:/var/lib/mysql
    restart: always
    environment:
      - MYSQL_ROOT_PASSWORD=somewordpress
      - MYSQL_DATABASE=wordpress
    expose:
      - 3306
      - 33060
  wordpress:
    image: wordpress:latest
    depends_on:
      db:
        condition: service_healthy
        restart: true
    ports:
      - 80:80
    restart: always
    environment:
      WORDPRESS_DB_HOST: db
      WORDPRESS_DB_USER: wordpress
      WORDPRESS_DB_NAME: wordpress
      WORDPRESS_DEBUG: 1
    networks:
      default:
        aliases: [blog]
      backend:
volumes:
  db_data:
networks:
  backend:
    driver: bridge
`;

const TRAEFIK = `
x-logging: &logging
  driver: json-file
  options:
    max-size: 10m
    max-file: "3"
services:
  traefik:
    image: traefik:v3.3
    command:
      - --providers.docker=true
      - --entrypoints.web.address=:80
    ports:
      - target: 80
        published: 80
        protocol: tcp
        mode: host
      - target: 8080
        published: "8080"
        host_ip: 127.0.0.1
    volumes:
      - /var/run/docker.sock:/var/run/docker.sock:ro
    labels:
      traefik.enable: "true"
      traefik.http.routers.api.rule: Host(\`traefik.localhost\`)
      com.example.weight: 3
    logging: *logging
    x-notes: anything goes here
  whoami:
    image: traefik/whoami
    labels:
      - traefik.http.routers.whoami.rule=Host(\`whoami.localhost\`)
    develop:
      watch:
        - path: ./src
          action: sync
          target: /app
    gpus: all
    x-custom: { a: 1 }
`;

describe('checkComposeSchema: valid files', () => {
  it.each([
    ['postgres with volumes and a healthcheck', POSTGRES],
    ['wordpress and mysql', WORDPRESS],
    ['traefik with labels, long-syntax ports and extensions', TRAEFIK],
  ])('accepts %s', (_name, yaml) => {
    expect(check(yaml)).toEqual({ valid: true, errors: [], warnings: [] });
  });

  it('accepts x- extension keys at the top level and in services', () => {
    expect(check('x-anchors:\n  a: 1\nservices:\n  s:\n    image: i\n    x-foo: [1, 2]\n').valid).toBe(true);
  });

  it('takes restart as any string: the schema does not list the policies', () => {
    expect(check('services:\n  s:\n    image: i\n    restart: sometimes\n').valid).toBe(true);
  });

  it('prints how long validating a 40-service file takes (no assertion)', () => {
    const services = Array.from({ length: 40 }, (_, i) => {
      const name = `svc${i}`;
      return [
        `  ${name}:`,
        `    image: registry.example/${name}:1.${i}`,
        '    restart: unless-stopped',
        '    environment: { A: "1", B: two, C: 3 }',
        '    ports: ["80", { target: 443, published: "8443" }]',
        `    volumes: [${name}:/data, { type: tmpfs, target: /tmp, tmpfs: { size: 1000 } }]`,
        '    depends_on: { svc0: { condition: service_started } }',
        '    healthcheck: { test: [CMD, "true"], interval: 5s }',
        '    labels: [a=b, c=d]',
        '    deploy: { resources: { limits: { memory: 512m } } }',
      ].join('\n');
    });
    const volumes = Array.from({ length: 40 }, (_, i) => `  svc${i}: {}`);
    const yaml = `services:\n${services.join('\n')}\nvolumes:\n${volumes.join('\n')}\n`;
    const root = parseYamlTree(yaml)!;
    checkComposeSchema(root, new Issues()); // compiles
    const runs = 20;
    const start = performance.now();
    for (let i = 0; i < runs; i++) expect(checkComposeSchema(root, new Issues())).toBe(true);
    console.log(
      `checkComposeSchema, 40 services: ${((performance.now() - start) / runs).toFixed(2)} ms per file`,
    );
  });
});

describe('checkComposeSchema: errors', () => {
  it('points an unknown service key at the key, with the key in the path', () => {
    expect(check('services:\n  web:\n    image: nginx\n    imgae: nginx\n')).toEqual({
      valid: false,
      errors: [
        {
          path: 'services.web.imgae',
          category: 'invalid_value',
          message: 'unknown key imgae (not in the Compose Specification)',
          line: 4,
          column: 5,
        },
      ],
      warnings: [],
    });
  });

  it('reports an unknown top-level key, but not x- ones', () => {
    expect(check('x-ok: 1\nservice:\n  web: {}\n').errors).toEqual([
      {
        path: 'service',
        category: 'invalid_value',
        message: 'unknown key service (not in the Compose Specification)',
        line: 2,
        column: 1,
      },
    ]);
  });

  it('reports a wrong type in plain words, at the value', () => {
    expect(check('services:\n  web:\n    image: [nginx]\n    privileged: 3\n').errors).toEqual([
      {
        path: 'services.web.image',
        category: 'invalid_value',
        message: 'must be a string, not a list',
        line: 3,
        column: 12,
      },
      {
        path: 'services.web.privileged',
        category: 'invalid_value',
        message: 'must be true or false or a string, not a number',
        line: 4,
        column: 17,
      },
    ]);
  });

  it('reports a bad enum value with the accepted ones', () => {
    const yaml =
      'services:\n  a:\n    image: i\n    depends_on:\n      b:\n        condition: service_ready\n';
    expect(check(yaml).errors).toEqual([
      {
        path: 'services.a.depends_on.b.condition',
        category: 'invalid_value',
        message: 'must be one of: service_started, service_healthy, service_completed_successfully',
        line: 6,
        column: 20,
      },
    ]);
  });

  it('reports a missing required key at the mapping that lacks it', () => {
    const yaml = 'services:\n  a:\n    image: i\n    depends_on:\n      b:\n        restart: true\n';
    expect(check(yaml).errors).toEqual([
      {
        path: 'services.a.depends_on.b.condition',
        category: 'missing_required_field',
        message: 'b needs the key condition',
        line: 6,
        column: 9,
      },
    ]);
  });

  it('reports a service name the schema refuses as invalid_service_name', () => {
    expect(check('services:\n  "my web":\n    image: i\n').errors).toEqual([
      {
        path: 'services.my web',
        category: 'invalid_service_name',
        message: 'the name "my web" is not accepted here: it must match ^[a-zA-Z0-9._-]+$',
        line: 2,
        column: 3,
      },
    ]);
  });

  it('reports repeated items of a unique list', () => {
    expect(
      check('services:\n  a:\n    image: i\n    cap_add: [NET_ADMIN, SYS_TIME, NET_ADMIN]\n').errors,
    ).toEqual([
      {
        path: 'services.a.cap_add.2',
        category: 'invalid_value',
        message: 'repeats item 0 of cap_add: items must be unique',
        line: 4,
        column: 36,
      },
    ]);
  });

  it('collects every problem of the file in one pass', () => {
    const yaml = 'services:\n  a:\n    image: 1\n    foo: x\n  b:\n    bar: y\nvolumes:\n  v: []\n';
    expect(check(yaml).errors.map((e) => e.path)).toEqual([
      'services.a.foo',
      'services.a.image',
      'services.b.bar',
      'volumes.v',
    ]);
  });
});

describe('checkComposeSchema: oneOf collapsed to one problem', () => {
  it('reports the bad key of a long-syntax port, not every form', () => {
    const yaml = 'services:\n  web:\n    image: i\n    ports:\n      - target: 80\n        publish: 8080\n';
    expect(check(yaml).errors).toEqual([
      {
        path: 'services.web.ports.0.publish',
        category: 'invalid_value',
        message: 'unknown key publish (not in the Compose Specification)',
        line: 6,
        column: 9,
      },
    ]);
  });

  it('lists the accepted kinds when the value is none of them', () => {
    expect(check('services:\n  web:\n    image: i\n    ports: [true]\n').errors).toEqual([
      {
        path: 'services.web.ports.0',
        category: 'invalid_value',
        message: 'must be a number, a string or a mapping, not a boolean',
        line: 4,
        column: 13,
      },
    ]);
    expect(check('services:\n  web:\n    image: i\n    environment: 3\n').errors).toEqual([
      {
        path: 'services.web.environment',
        category: 'invalid_value',
        message: 'must be a mapping or a list, not a number',
        line: 4,
        column: 18,
      },
    ]);
  });

  it('reports the deepest problem of a nested oneOf (a network entry inside the mapping form)', () => {
    const yaml = 'services:\n  web:\n    image: i\n    networks:\n      front:\n        alias: [x]\n';
    expect(check(yaml).errors).toEqual([
      {
        path: 'services.web.networks.front.alias',
        category: 'invalid_value',
        message: 'unknown key alias (not in the Compose Specification)',
        line: 6,
        column: 9,
      },
    ]);
  });

  it('says no form matches when the kind fits a form but a rule of it does not', () => {
    expect(check('services:\n  web:\n    image: i\n    cpu_percent: 150\n').errors).toEqual([
      {
        path: 'services.web.cpu_percent',
        category: 'invalid_value',
        message: 'does not match any accepted form of cpu_percent',
        line: 4,
        column: 18,
      },
    ]);
  });

  it('reports a long-syntax volume without its type as a missing key', () => {
    const yaml =
      'services:\n  web:\n    image: i\n    volumes:\n      - source: data\n        target: /data\n';
    expect(check(yaml).errors).toEqual([
      {
        path: 'services.web.volumes.0.type',
        category: 'missing_required_field',
        message: 'item 0 of volumes needs the key type',
        line: 5,
        column: 9,
      },
    ]);
  });
});

describe('toPlain', () => {
  it('turns the tree into JSON values, keeping __proto__ an ordinary key', () => {
    const plain = toPlain(parseYamlTree('a: [1, "x", true, ~]\n__proto__: { polluted: 1 }\n')!) as Record<
      string,
      unknown
    >;
    expect(JSON.parse(JSON.stringify(plain))).toEqual({
      a: [1, 'x', true, null],
      ['__proto__']: { polluted: 1 },
    });
    expect(Object.getOwnPropertyNames(plain)).toEqual(['a', '__proto__']);
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
