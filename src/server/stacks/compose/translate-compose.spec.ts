import { describe, expect, it } from 'vitest';
import { getCatalog } from '../catalog/catalog.js';
import { Issues } from '../definition/issues.js';
import { parseYamlTree, type YamlMap } from '../definition/yaml-tree.js';
import { translateCompose, type ComposeOptions } from './translate-compose.js';

const OPTIONS: ComposeOptions = { profiles: [], variables: {}, defaultStackkit: 'basement-kit' };

function translate(source: string, options: Partial<ComposeOptions> = {}) {
  const issues = new Issues();
  const definition = translateCompose(
    parseYamlTree(source) as YamlMap,
    { ...OPTIONS, ...options },
    getCatalog(),
    issues,
  );
  return { definition, errors: issues.errors, warnings: issues.warnings };
}

const service = (source: string, name: string, options: Partial<ComposeOptions> = {}) => {
  const { definition, errors } = translate(source, options);
  expect(errors).toEqual([]);
  return definition!.services.find((s) => s.name === name)!;
};

describe('a Compose file as a normalized definition', () => {
  const POSTGRES = `
name: shop
services:
  db:
    image: postgres:16-alpine
    environment:
      POSTGRES_PASSWORD: example
      POSTGRES_DB: shop
    volumes:
      - db-data:/var/lib/postgresql/data
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U postgres"]
      interval: 5s
      timeout: 3s
      retries: 10
      start_period: 1m30s
  app:
    image: registry.example.com/shop/app:2.1
    command: npm run "start server" --port=3000
    ports: ["127.0.0.1:3000:3000", "9000-9001:9000-9001/udp"]
    depends_on:
      db:
        condition: service_healthy
        restart: true
    restart: unless-stopped
volumes:
  db-data:
`;

  it('keeps the volume, the command health check, the start condition and the ports', () => {
    const { definition, errors, warnings } = translate(POSTGRES);
    expect(errors).toEqual([]);
    expect(warnings).toEqual([]);
    expect(definition).toMatchObject({
      name: 'shop',
      stackkit: 'basement-kit',
      variant: 'default',
      format: 'compose',
      volumes: [{ name: 'db-data', labels: {} }],
    });
    expect(definition!.services.map((s) => s.name)).toEqual(['db', 'app']);
    const [db, app] = definition!.services;
    expect(db).toMatchObject({
      image: 'postgres:16-alpine',
      driver: 'docker',
      env: { POSTGRES_PASSWORD: 'example', POSTGRES_DB: 'shop' },
      volumes: [{ type: 'volume', source: 'db-data', target: '/var/lib/postgresql/data', read_only: false }],
      health_check: {
        type: 'command',
        test: ['/bin/sh', '-c', 'pg_isready -U postgres'],
        interval_ms: 5000,
        timeout_ms: 3000,
        retries: 10,
        start_period_ms: 90_000,
        start_interval_ms: 5000,
        port: 0,
      },
      restart: 'never',
      resources: { capped: false },
    });
    expect(app).toMatchObject({
      command: ['npm', 'run', 'start server', '--port=3000'],
      ports: [
        { container: 3000, host: 3000, protocol: 'tcp', address: '127.0.0.1' },
        { container: 9000, host: 9000, protocol: 'udp' },
        { container: 9001, host: 9001, protocol: 'udp' },
      ],
      depends_on: ['db'],
      start_conditions: { db: { condition: 'service_healthy', required: true, restart: true } },
      restart: 'always',
    });
  });

  it('counts a service without limits at the variant default and leaves it uncapped; limits are hard caps', () => {
    const source = `
name: s
services:
  free: { image: busybox }
  capped:
    image: busybox
    deploy:
      resources:
        limits: { cpus: "0.5", memory: 512m }
        reservations: { memory: 128M }
  legacy: { image: busybox, cpus: 1.5, mem_limit: 1g }
`;
    const variant = getCatalog().kits.get('basement-kit')!.variants.get('default')!;
    expect(service(source, 'free').resources).toEqual({ ...variant.default_resources, capped: false });
    expect(service(source, 'free').container).toBeUndefined();
    expect(service(source, 'capped')).toMatchObject({
      resources: { cpu: 0.5, memory_bytes: 128 * 2 ** 20, capped: false },
      container: {
        cpu_limit: 0.5,
        memory_limit_bytes: 512 * 2 ** 20,
        memory_reservation_bytes: 128 * 2 ** 20,
      },
    });
    expect(service(source, 'legacy').container).toMatchObject({
      cpu_limit: 1.5,
      memory_limit_bytes: 2 ** 30,
    });
  });

  it('refuses a limit above what the variant allows a service', () => {
    const { errors } = translate('name: s\nservices:\n  big: { image: busybox, mem_limit: 900g }\n');
    expect(errors.map((e) => [e.path, e.category])).toEqual([
      ['services.big.deploy.resources', 'resource_constraint'],
      // The stack's total counts the reservation, which is the limit here.
      ['services', 'resource_constraint'],
    ]);
  });

  it('takes pass-through environment entries from the variables, and warns of those not given', () => {
    const source = `
name: s
services:
  web:
    image: busybox
    environment: [ "A=1", "B", "C", "discovery.type=single-node", "EMPTY=" ]
`;
    const { definition, warnings } = translate(source, { variables: { B: 'from-variables' } });
    expect(definition!.services[0].env).toEqual({
      A: '1',
      B: 'from-variables',
      'discovery.type': 'single-node',
      EMPTY: '',
    });
    expect(warnings).toMatchObject([
      { path: 'services.web.environment.2', message: expect.stringContaining('variable C is not among') },
    ]);
  });

  it('splits string commands as Compose does and keeps list forms; an empty entrypoint clears the image one', () => {
    const source = `
name: s
services:
  a: { image: busybox, command: "sh -c 'echo \\"hi there\\" && sleep 1'", entrypoint: "" }
  b: { image: busybox, command: [sleep, 3600], entrypoint: [/bin/tini, --] }
`;
    expect(service(source, 'a')).toMatchObject({
      command: ['sh', '-c', 'echo "hi there" && sleep 1'],
      container: { entrypoint: [] },
    });
    expect(service(source, 'b')).toMatchObject({
      command: ['sleep', '3600'],
      container: { entrypoint: ['/bin/tini', '--'] },
    });
  });

  it('places inline configs and secrets as files, at Compose default targets', () => {
    const source = `
name: s
services:
  web:
    image: nginx
    configs:
      - site
      - { source: site, target: /etc/nginx/conf.d/default.conf, mode: 0440 }
    secrets: [token]
configs:
  site: { content: "server { listen 80; }" }
secrets:
  token: { environment: TOKEN }
`;
    expect(service(source, 'web', { variables: { TOKEN: 's3cret' } }).files).toEqual([
      { path: '/site', content: 'server { listen 80; }', mode: 0o444, credential: null },
      {
        path: '/etc/nginx/conf.d/default.conf',
        content: 'server { listen 80; }',
        mode: 0o440,
        credential: null,
      },
      { path: '/run/secrets/token', content: 's3cret', mode: 0o444, credential: null },
    ]);
  });

  it('reads every volume form; binds warn that the worker must allow them', () => {
    const source = `
name: s
services:
  web:
    image: busybox
    volumes:
      - data:/data:ro
      - /cache
      - /srv/www:/www
      - { type: tmpfs, target: /scratch, tmpfs: { size: 64m } }
      - { type: volume, source: data, target: /also }
    tmpfs: /run
volumes:
  data: { labels: { team: a } }
`;
    const { definition, warnings, errors } = translate(source);
    expect(errors).toEqual([]);
    expect(definition!.services[0].volumes).toEqual([
      { type: 'volume', source: 'data', target: '/data', read_only: true },
      { type: 'volume', source: '', target: '/cache', read_only: false },
      { type: 'bind', source: '/srv/www', target: '/www', read_only: false },
      { type: 'tmpfs', source: '', target: '/scratch', read_only: false, size_bytes: 64 * 2 ** 20 },
      { type: 'volume', source: 'data', target: '/also', read_only: false },
      { type: 'tmpfs', source: '', target: '/run', read_only: false },
    ]);
    expect(definition!.volumes).toEqual([{ name: 'data', labels: { team: 'a' } }]);
    expect(warnings).toMatchObject([
      { path: 'services.web.volumes.2', message: expect.stringContaining('--allow-host-path') },
    ]);
  });

  it('refuses relative binds, undeclared volumes and subpaths, naming what to do', () => {
    const source = `
name: s
services:
  web:
    image: busybox
    volumes:
      - ./nginx.conf:/etc/nginx/nginx.conf
      - missing:/data
      - { type: volume, source: data, target: /x, volume: { subpath: a } }
volumes: { data: {} }
`;
    const { errors } = translate(source);
    expect(errors.map((e) => [e.path, e.message.split(':')[0]])).toEqual([
      [
        'services.web.volumes.0',
        'a bind of a relative or home path needs the project directory, which a plain Compose file does not bring (project bundles',
      ],
      ['services.web.volumes.1', 'volume missing is not declared under the top-level volumes'],
      ['services.web.volumes.2.volume.subpath', 'volume.subpath is refused'],
    ]);
  });

  it('refuses host power and builds with the key named, and warns of keys without effect', () => {
    const source = `
version: "3.8"
name: s
services:
  web:
    image: busybox
    build: .
    privileged: true
    network_mode: host
    cap_add: [NET_ADMIN]
    container_name: my-web
    logging: { driver: json-file }
    x-notes: ignored
x-anchors: { a: 1 }
`;
    const { errors, warnings } = translate(source);
    expect(errors.map((e) => e.path)).toEqual([
      'services.web.build',
      'services.web.privileged',
      'services.web.network_mode',
      'services.web.cap_add',
    ]);
    expect(errors[1].message).toMatch(/^privileged is refused: it gives the container power over the node/);
    expect(errors[0].message).toMatch(/^build is refused: images are not built/);
    expect(warnings.map((w) => w.path)).toEqual([
      'version',
      'services.web.container_name',
      'services.web.logging',
    ]);
    expect(warnings[1].message).toMatch(/^container_name has no effect here/);
  });

  it('runs only the services of the selected profiles, and refuses a dependency on one left out', () => {
    const source = `
name: s
services:
  web: { image: busybox }
  debug: { image: busybox, profiles: [debug] }
  tools: { image: busybox, profiles: [tools], depends_on: [debug] }
`;
    const plain = translate(source);
    expect(plain.definition!.services.map((s) => s.name)).toEqual(['web']);
    expect(plain.warnings.map((w) => w.path)).toEqual(['services.debug', 'services.tools']);
    expect(
      translate(source, { profiles: ['debug'] })
        .definition!.services.map((s) => s.name)
        .sort(),
    ).toEqual(['debug', 'web']);
    expect(translate(source, { profiles: ['tools'] }).errors).toMatchObject([
      {
        path: 'services.tools.depends_on.0',
        message: expect.stringContaining('profiles (debug) are not selected'),
      },
    ]);
  });

  it('maps restart forms and deploy.restart_policy', () => {
    const source = `
name: s
services:
  a: { image: busybox, restart: "no" }
  b: { image: busybox, restart: on-failure:5 }
  c: { image: busybox, restart: always }
  d: { image: busybox, deploy: { restart_policy: { condition: on-failure, max_attempts: 2 } } }
  e: { image: busybox }
`;
    const { definition } = translate(source);
    const by = Object.fromEntries(definition!.services.map((s) => [s.name, s]));
    expect(by.a.restart).toBe('never');
    expect(by.b).toMatchObject({ restart: 'on-failure', container: { restart_max_retries: 5 } });
    expect(by.c.restart).toBe('always');
    expect(by.d).toMatchObject({ restart: 'on-failure', container: { restart_max_retries: 2 } });
    expect(by.e.restart).toBe('never');
    expect(
      translate('name: s\nservices:\n  a: { image: busybox, restart: sometimes }\n').errors,
    ).toMatchObject([{ path: 'services.a.restart', category: 'invalid_value' }]);
  });

  it('reads container options', () => {
    const source = `
name: s
services:
  web:
    image: busybox
    user: "1000:1000"
    working_dir: /app
    hostname: web-1
    labels: [ "traefik.enable=true" ]
    networks: { front: { aliases: [www] } }
    extra_hosts: [ "db.local:10.0.0.5", "gw=host-gateway" ]
    stop_signal: SIGQUIT
    stop_grace_period: 1m
    init: true
    read_only: true
    shm_size: 256m
    ulimits: { nofile: { soft: 1024, hard: 4096 }, nproc: 512 }
    expose: [ "8080", 9090 ]
    links: [ "cache:redis" ]
  cache: { image: redis }
networks: { front: {} }
`;
    expect(service(source, 'web').container).toEqual({
      user: '1000:1000',
      working_dir: '/app',
      hostname: 'web-1',
      labels: { 'traefik.enable': 'true' },
      aliases: ['www'],
      extra_hosts: ['db.local:10.0.0.5', 'gw:host-gateway'],
      stop_signal: 'SIGQUIT',
      stop_grace_period_ms: 60_000,
      init: true,
      read_only: true,
      shm_size_bytes: 256 * 2 ** 20,
      ulimits: [
        { name: 'nofile', soft: 1024, hard: 4096 },
        { name: 'nproc', soft: 512, hard: 512 },
      ],
      expose: [8080, 9090],
    });
    expect(service(source, 'cache').container).toEqual({ aliases: ['redis'] });
    expect(service(source, 'web').depends_on).toEqual(['cache']);
  });

  it('takes the name from the request first, then the file; without either it is an error', () => {
    expect(translate('name: file-name\nservices: { a: { image: busybox } }').definition!.name).toBe(
      'file-name',
    );
    expect(
      translate('name: file-name\nservices: { a: { image: busybox } }', { name: 'asked' }).definition!.name,
    ).toBe('asked');
    expect(translate('services: { a: { image: busybox } }').errors).toMatchObject([
      { path: 'name', category: 'missing_required_field' },
    ]);
    expect(translate('name: Bad_Name\nservices: { a: { image: busybox } }').errors).toMatchObject([
      { path: 'name', category: 'invalid_value' },
    ]);
  });

  it('takes the kit from the request, then x-stackkit, then the default', () => {
    const file = 'name: s\nx-stackkit: cloud-kit\nservices: { a: { image: busybox } }';
    expect(translate(file).definition!.stackkit).toBe('cloud-kit');
    expect(translate(file, { stackkit: 'modern-homelab' }).definition!.stackkit).toBe('modern-homelab');
    expect(translate('name: s\nservices: { a: { image: busybox } }').definition!.stackkit).toBe(
      'basement-kit',
    );
    expect(translate(file, { stackkit: 'nope' }).errors).toMatchObject([
      { path: 'stackkit', category: 'unsupported_stackkit' },
    ]);
  });

  it('refuses service names that are not DNS labels and keys it does not know', () => {
    const { errors } = translate(
      'name: s\nservices:\n  My_Web: { image: busybox }\n  b: { image: busybox, bogus: 1 }\n',
    );
    expect(errors).toMatchObject([
      { path: 'services.My_Web', category: 'invalid_service_name' },
      { path: 'services.b.bogus', category: 'invalid_value' },
    ]);
  });

  it('never repeats a value in a message', () => {
    const { errors, warnings } = translate(`
name: s
services:
  a:
    image: busybox
    ports: ["hunter2:80"]
    environment: { X: "\${hunter2}" }
    restart: hunter2
`);
    for (const issue of [...errors, ...warnings]) expect(issue.message).not.toContain('hunter2');
  });
});
