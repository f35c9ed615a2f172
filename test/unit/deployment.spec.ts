import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { load, loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { VARIABLES } from '../../src/server/config/variables.js';

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

  it('copies into the build stage every directory `npm run build` reads (src, console, native via scripts), and a C compiler for the addon', () => {
    const build = dockerfile.slice(0, dockerfile.indexOf('AS runtime'));
    for (const dir of ['src', 'console', 'native', 'scripts']) {
      expect(build).toMatch(new RegExp(`^COPY ${dir} \\./${dir}$`, 'm'));
    }
    expect(build).toMatch(/apt-get install -y --no-install-recommends gcc libc6-dev/);
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

describe('docker-compose.yml, profile replicas', () => {
  interface Service {
    image?: string;
    profiles?: string[];
    ports?: string[];
    volumes?: string[];
    depends_on?: Record<string, { condition: string }> | string[];
    environment?: Record<string, string>;
  }
  const compose = load(read('docker-compose.yml')) as { services: Record<string, Service> };
  const inProfile = Object.entries(compose.services).filter(([, svc]) => svc.profiles?.includes('replicas'));
  const replicas = inProfile.filter(([, svc]) => svc.image === 'stack-orchestrator:local');
  const balancer = inProfile.find(([, svc]) => svc.image?.startsWith('haproxy:'));
  /** What compose makes of `${NAME:-default}` when NAME is not set. */
  const unset = (value: string | undefined): string =>
    (value ?? '').replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1').replace(/\$\{[A-Z_]+\}/g, '');

  it('leaves the default `docker compose up` alone: postgres and the single service are in no profile', () => {
    expect(compose.services.orchestrator.profiles).toBeUndefined();
    expect(compose.services.postgres.profiles).toBeUndefined();
  });

  it('runs three replicas on the same PostgreSQL, never the embedded database, and no host ports', () => {
    expect(replicas.map(([name]) => name).sort()).toEqual([
      'orchestrator-1',
      'orchestrator-2',
      'orchestrator-3',
    ]);
    for (const [, svc] of replicas) {
      expect(svc.environment?.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\/stack$/);
      expect(svc.environment?.PUBLIC_URL).toBe(compose.services.orchestrator.environment?.PUBLIC_URL);
      expect(svc.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
      expect(svc.ports).toBeUndefined();
    }
  });

  it('gives every replica one ENCRYPTION_KEY of at least 32 characters, also when it is not set', () => {
    const keys = new Set(replicas.map(([, svc]) => svc.environment?.ENCRYPTION_KEY));
    expect(keys.size).toBe(1);
    const [key] = [...keys];
    expect(() => VARIABLES.ENCRYPTION_KEY.parse(unset(key))).not.toThrow();
  });

  it('puts the balancer on the host ports 5260 and 5263 with the HAProxy configuration', () => {
    expect(balancer).toBeDefined();
    const [, lb] = balancer!;
    expect(lb.ports).toEqual(['5260:5260', '5263:5263']);
    expect(lb.volumes).toContain('./deploy/compose/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro');
    expect(lb.depends_on).toEqual(replicas.map(([name]) => name));
  });

  describe('deploy/compose/haproxy.cfg', () => {
    /** Section header ("backend replicas-http") to its lines, comments dropped. */
    const sections = new Map<string, string[]>();
    let current: string[] = [];
    for (const raw of read('deploy/compose/haproxy.cfg').split('\n')) {
      const line = raw.replace(/#.*/, '').trimEnd();
      if (line === '') continue;
      if (/^\S/.test(line)) sections.set(line, (current = []));
      else current.push(line.trim());
    }
    const frontendOn = (port: number): string[] => {
      const entry = [...sections].find(
        ([head, lines]) => head.startsWith('frontend ') && lines.includes(`bind :${port}`),
      );
      expect(entry, `a frontend binding :${port}`).toBeDefined();
      return entry![1];
    };
    const backendOf = (frontend: string[]): string[] => {
      const name = frontend.find((l) => l.startsWith('default_backend '))?.split(/\s+/)[1];
      const lines = sections.get(`backend ${name}`);
      expect(lines, `backend ${name}`).toBeDefined();
      return lines!;
    };

    it('is TCP throughout', () => {
      expect(sections.get('defaults')).toContain('mode tcp');
      for (const lines of sections.values())
        expect(lines.filter((l) => l.startsWith('mode '))).not.toContain('mode http');
    });

    it.each([5260, 5263])(
      'sends :%i round robin to that port of every replica, checking /health/ready on 5260',
      (port) => {
        const backend = backendOf(frontendOn(port));
        expect(backend).toContain('balance roundrobin');
        expect(backend).toContain('option httpchk');
        expect(backend).toContain('http-check send meth GET uri /health/ready');
        expect(backend).toContain('http-check expect status 200');
        const servers = backend.filter((l) => l.startsWith('server ')).map((l) => l.split(/\s+/));
        expect(servers.map((words) => words[2]).sort()).toEqual(
          replicas.map(([name]) => `${name}:${port}`).sort(),
        );
        for (const words of servers) {
          expect(words).toContain('check');
          // The agent port speaks TLS, so its replicas are checked on their HTTP port.
          if (port !== 5260)
            expect(words.slice(words.indexOf('port'), words.indexOf('port') + 2)).toEqual(['port', '5260']);
        }
      },
    );
  });
});

describe('deploy/kubernetes (kustomize base)', () => {
  const dir = 'deploy/kubernetes';
  interface Manifest {
    apiVersion: string;
    kind: string;
    metadata: { name: string; labels?: Record<string, string> };
    spec?: Record<string, unknown>;
    stringData?: Record<string, string>;
  }
  interface EnvVar {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
  }
  interface Probe {
    httpGet: { path: string; port: string | number };
    periodSeconds?: number;
    timeoutSeconds?: number;
    failureThreshold?: number;
  }
  interface Container {
    image: string;
    ports: { name: string; containerPort: number; protocol?: string }[];
    env: EnvVar[];
    envFrom?: { configMapRef?: { name: string } }[];
    livenessProbe: Probe;
    readinessProbe: Probe;
    startupProbe: Probe;
    lifecycle?: { preStop?: { exec?: { command: string[] } } };
    resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
    securityContext?: {
      readOnlyRootFilesystem?: boolean;
      allowPrivilegeEscalation?: boolean;
      runAsNonRoot?: boolean;
    };
    volumeMounts?: { name: string; mountPath: string }[];
  }
  interface PodSpec {
    containers: Container[];
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
    terminationGracePeriodSeconds?: number;
    affinity?: { podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution?: unknown[] } };
    volumes?: { name: string; emptyDir?: object }[];
  }
  interface DeploymentSpec {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  }
  interface ServiceSpec {
    type?: string;
    selector: Record<string, string>;
    ports: { port: number; targetPort: string | number; protocol?: string }[];
  }

  const files = readdirSync(new URL(`../../${dir}`, import.meta.url)).filter((f) => /\.ya?ml$/.test(f));
  const documents = new Map(
    files.map((f) => [f, (loadAll(read(`${dir}/${f}`)) as Manifest[]).filter(Boolean)]),
  );
  const kustomization = load(read(`${dir}/kustomization.yaml`)) as {
    resources: string[];
    configMapGenerator?: { name: string; literals?: string[] }[];
  };
  const resources = kustomization.resources.flatMap((f) => documents.get(f) ?? []);
  const only = (kind: string): Manifest[] => resources.filter((m) => m.kind === kind);

  it('lists manifests that exist, every manifest but the secret example, and parses each', () => {
    for (const f of kustomization.resources)
      expect(existsSync(new URL(`../../${dir}/${f}`, import.meta.url)), f).toBe(true);
    const manifests = files.filter((f) => f !== 'kustomization.yaml' && f !== 'secret.example.yaml');
    expect([...kustomization.resources].sort()).toEqual(manifests.sort());
    for (const m of resources)
      expect(m.apiVersion && m.kind && m.metadata.name, JSON.stringify(m)).toBeTruthy();
  });

  // A missing Deployment fails this file at collection, loudly.
  const deployment = only('Deployment')[0] as Manifest & { spec: DeploymentSpec };
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const env = new Map(container.env.map((e) => [e.name, e]));
  /** A named or numbered container port as its number. */
  const portNumber = (port: string | number): number | undefined =>
    typeof port === 'number' ? port : container.ports.find((p) => p.name === port)?.containerPort;

  it('runs three replicas of the service image, selecting its own pods', () => {
    expect(only('Deployment')).toHaveLength(1);
    expect(deployment.spec.replicas).toBe(3);
    expect(pod.containers).toHaveLength(1);
    expect(container.image).toMatch(/^stack-orchestrator(:|$)/);
    expect(deployment.spec.template.metadata.labels).toMatchObject(deployment.spec.selector.matchLabels);
  });

  it('listens on 5260 (http) and 5263 (agents), as PORT and AGENT_PORT say', () => {
    expect(container.ports.map((p) => [p.name, p.containerPort, p.protocol ?? 'TCP'])).toEqual([
      ['http', 5260, 'TCP'],
      ['agents', 5263, 'TCP'],
    ]);
    expect(env.get('PORT')?.value).toBe('5260');
    expect(env.get('AGENT_PORT')?.value).toBe('5263');
  });

  it('probes /health/startup, /health/live and /health/ready on the HTTP port', () => {
    expect(container.startupProbe.httpGet.path).toBe('/health/startup');
    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
    for (const probe of [container.startupProbe, container.livenessProbe, container.readinessProbe]) {
      expect(portNumber(probe.httpGet.port)).toBe(5260);
    }
  });

  it("checks readiness as the document's container check: every 30 s, 10 s timeout, 3 failures", () => {
    const { periodSeconds, timeoutSeconds, failureThreshold } = container.readinessProbe;
    expect({ periodSeconds, timeoutSeconds, failureThreshold }).toEqual({
      periodSeconds: 30,
      timeoutSeconds: 10,
      failureThreshold: 3,
    });
  });

  it('takes DATABASE_URL, the bootstrap client and ENCRYPTION_KEY from one Secret, matching the example', () => {
    const example = documents.get('secret.example.yaml')?.[0];
    expect(example?.kind).toBe('Secret');
    for (const name of ['DATABASE_URL', 'BOOTSTRAP_CLIENT_ID', 'BOOTSTRAP_CLIENT_SECRET', 'ENCRYPTION_KEY']) {
      const ref = env.get(name)?.valueFrom?.secretKeyRef;
      expect(ref, name).toBeDefined();
      expect(ref?.name).toBe(example?.metadata.name);
      expect(ref?.optional).not.toBe(true);
      expect(Object.keys(example?.stringData ?? {})).toContain(ref?.key);
      expect(env.get(name)?.value).toBeUndefined();
    }
    expect(example?.stringData?.DATABASE_URL).toMatch(/^postgres:\/\//);
  });

  it('sets only variables the service knows, PUBLIC_URL among them', () => {
    const generated = (kustomization.configMapGenerator ?? []).flatMap((g) => g.literals ?? []);
    const names = [...env.keys(), ...generated.map((l) => l.split('=')[0])];
    expect(names).toContain('PUBLIC_URL');
    for (const name of names) expect(Object.keys(VARIABLES), name).toContain(name);
    const fromConfigMaps = (container.envFrom ?? []).map((e) => e.configMapRef?.name);
    expect(fromConfigMaps).toEqual((kustomization.configMapGenerator ?? []).map((g) => g.name));
  });

  it('runs as non-root on a read-only root, with DATA_DIR and /tmp on emptyDir volumes', () => {
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    expect(container.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(container.securityContext?.allowPrivilegeEscalation).toBe(false);
    const mounted = new Map((container.volumeMounts ?? []).map((m) => [m.mountPath, m.name]));
    const emptyDirs = (pod.volumes ?? []).filter((v) => v.emptyDir).map((v) => v.name);
    for (const path of [env.get('DATA_DIR')?.value ?? '', '/tmp'])
      expect(emptyDirs, path).toContain(mounted.get(path));
  });

  it('gives the service its SHUTDOWN_TIMEOUT after the preStop pause before SIGKILL', () => {
    const pause = container.lifecycle?.preStop?.exec?.command;
    expect(pause?.[0]).toBe('sleep');
    const shutdownMs = VARIABLES.SHUTDOWN_TIMEOUT.parse(
      env.get('SHUTDOWN_TIMEOUT')?.value ?? VARIABLES.SHUTDOWN_TIMEOUT.default,
    );
    expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(
      Number(pause?.[1]) * 1000 + shutdownMs,
    );
  });

  it('has resource requests and limits and prefers one replica per node', () => {
    expect(Object.keys(container.resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
    expect(container.resources?.limits?.memory).toBeDefined();
    expect(pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
  });

  describe.each([
    ['HTTP', 5260, 'ClusterIP'],
    ['agent', 5263, 'LoadBalancer'],
  ])('the %s Service', (_what, port, type) => {
    const service = only('Service')
      .map((m) => m as Manifest & { spec: ServiceSpec })
      .find((m) => m.spec.ports.some((p) => portNumber(p.targetPort) === port));

    it(`exposes ${port} as ${type}, selecting the Deployment's pods`, () => {
      expect(service).toBeDefined();
      expect(service!.spec.type ?? 'ClusterIP').toBe(type);
      expect(service!.spec.ports.map((p) => [p.port, portNumber(p.targetPort), p.protocol ?? 'TCP'])).toEqual(
        [[port, port, 'TCP']],
      );
      expect(deployment.spec.template.metadata.labels).toMatchObject(service!.spec.selector);
    });
  });

  it('has a PodDisruptionBudget over the same pods that keeps two of three up', () => {
    expect(only('PodDisruptionBudget')).toHaveLength(1);
    const pdb = only('PodDisruptionBudget')[0] as Manifest & {
      spec: {
        selector: { matchLabels: Record<string, string> };
        maxUnavailable?: number;
        minAvailable?: number;
      };
    };
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    const available = pdb.spec.minAvailable ?? deployment.spec.replicas - (pdb.spec.maxUnavailable ?? 0);
    expect(available).toBeGreaterThanOrEqual(2);
    expect(available).toBeLessThan(deployment.spec.replicas);
  });
});
