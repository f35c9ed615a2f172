import { createHash } from 'node:crypto';
import type { ContainerOptionsMsg, ServiceSpecMsg } from '../../contracts/agent-protocol/index.js';
import type { JobPayload } from '../jobs/entities/job.entity.js';
import type {
  ContainerOptionsDefinition,
  ServiceDefinition,
  ServiceFileDefinition,
  StackDefinition,
} from './definition/definition.types.js';
import { PATHS } from './monitoring/monitoring-paths.js';

/**
 * The digest of what makes a service what it is on the node: image or command, environment, ports,
 * limits and restart policy. The agent keeps it beside the service; a different digest means the
 * service must be replaced. Health checks and dependencies are not part of it (they change nothing
 * the runtime runs).
 */
export function serviceDigest(service: ServiceDefinition): string {
  const canonical = {
    image: service.image ?? '',
    command: service.command,
    env: Object.fromEntries(Object.entries(service.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    // The address only when set, so the digests of services without one stay what they were.
    ports: [...service.ports]
      .map((p) => `${p.address ? `${p.address}/` : ''}${p.host}:${p.container}/${p.protocol}`)
      .sort(),
    cpu: service.resources.cpu,
    memory_bytes: service.resources.memory_bytes,
    restart: service.restart,
    // Only when there are any, so the digests of services without files stay what they were.
    ...(service.files?.length ? { files: service.files.map(fileDigestPart) } : {}),
    ...(service.volumes?.length
      ? { volumes: service.volumes.map((v) => [v.type, v.source, v.target, v.read_only, v.size_bytes ?? 0]) }
      : {}),
    ...(service.resources.capped === false ? { uncapped: true } : {}),
    ...(service.container && Object.keys(service.container).length > 0
      ? { container: canonicalContainer(service.container) }
      : {}),
  };
  return `sha256:${sha256(JSON.stringify(canonical))}`;
}

/** The container options in a fixed key order, so the digest does not depend on how they were built. */
function canonicalContainer(options: ContainerOptionsDefinition): unknown {
  return Object.fromEntries(
    Object.entries(options)
      .filter(([, value]) => value !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, value]) =>
        key === 'labels' ? [key, Object.entries(value as Record<string, string>).sort()] : [key, value],
      ),
  );
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A file as the digest counts it: its text as the definition holds it (deploy-time values are
 * filled in later and do not change it), a credential by whose it is (the secret never enters a
 * digest).
 */
const fileDigestPart = (f: ServiceFileDefinition) => [
  f.path,
  f.mode,
  f.credential ? `credential:${f.credential}` : `sha256:${sha256(f.content)}`,
];

/**
 * Whether the stack's own metrics store runs with a generated prometheus.yml: it then scrapes the
 * stack's containers that declare `metrics` on the stack network and remote-writes them into the
 * built-in store, so their agent does not scrape them as well (docs/metrics.md, "One scraper").
 */
export function storeScrapesContainers(services: ServiceDefinition[]): boolean {
  return services.some(
    (s) => s.origin === 'monitoring' && (s.files ?? []).some((f) => f.path === PATHS.prometheusConfig),
  );
}

/** `storeScrapes`: see {@link storeScrapesContainers} for the stack the service belongs to. */
export function toServiceSpec(service: ServiceDefinition, storeScrapes = false): ServiceSpecMsg {
  return {
    name: service.name,
    image: service.image ?? '',
    command: service.command,
    env: service.env,
    ports: service.ports.map((p) => ({
      container: p.container,
      host: p.host,
      protocol: p.protocol,
      ...(p.address ? { address: p.address } : {}),
    })),
    cpu: service.resources.cpu,
    memory_bytes: service.resources.memory_bytes,
    restart: service.restart,
    health_check: service.health_check
      ? {
          path: service.health_check.path,
          port: service.health_check.port,
          interval_ms: service.health_check.interval_ms,
          ...(service.health_check.type === 'command'
            ? {
                type: 'command',
                test: service.health_check.test ?? [],
                timeout_ms: service.health_check.timeout_ms ?? 30_000,
                retries: service.health_check.retries ?? 3,
                start_period_ms: service.health_check.start_period_ms ?? 0,
                start_interval_ms: service.health_check.start_interval_ms ?? 5_000,
              }
            : {}),
        }
      : null,
    digest: serviceDigest(service),
    metrics: scrapeSpec(service, storeScrapes),
    ...(service.files?.length
      ? { files: service.files.map((f) => ({ path: f.path, content: f.content, mode: f.mode })) }
      : {}),
    ...(service.volumes?.length
      ? {
          volumes: service.volumes.map((v) => ({
            type: v.type,
            source: v.source,
            target: v.target,
            read_only: v.read_only,
            size_bytes: v.size_bytes ?? 0,
          })),
        }
      : {}),
    ...(service.start_conditions && Object.keys(service.start_conditions).length > 0
      ? {
          start_conditions: Object.entries(service.start_conditions).map(([name, c]) => ({
            service: name,
            condition: c.condition,
            required: c.required,
            restart: c.restart,
          })),
        }
      : {}),
    ...(service.container || service.resources.capped === false
      ? { container: containerMsg(service.container ?? {}, service.resources.capped === false) }
      : {}),
  };
}

function containerMsg(c: ContainerOptionsDefinition, uncapped: boolean): ContainerOptionsMsg {
  return {
    entrypoint: c.entrypoint ?? [],
    entrypoint_set: c.entrypoint !== undefined,
    user: c.user ?? '',
    working_dir: c.working_dir ?? '',
    hostname: c.hostname ?? '',
    labels: c.labels ?? {},
    aliases: c.aliases ?? [],
    extra_hosts: c.extra_hosts ?? [],
    stop_signal: c.stop_signal ?? '',
    stop_grace_period_ms: c.stop_grace_period_ms ?? 0,
    init: c.init ?? false,
    read_only: c.read_only ?? false,
    shm_size_bytes: c.shm_size_bytes ?? 0,
    ulimits: c.ulimits ?? [],
    expose: c.expose ?? [],
    memory_reservation_bytes: c.memory_reservation_bytes ?? 0,
    restart_max_retries: c.restart_max_retries ?? 0,
    uncapped,
    cpu_limit: c.cpu_limit ?? 0,
    memory_limit_bytes: c.memory_limit_bytes ?? 0,
  };
}

/**
 * Where the agent scrapes the service's metrics: a process's own port; for a container, the host
 * port a TCP mapping publishes the metrics port on, else port 0 (not scraped by the agent: the
 * stack's metrics store scrapes it inside the container network); port 0 as well for every
 * container when `storeScrapes` (the stack's metrics store scrapes them: one scraper per series).
 * Revisions stored before the field have no `metrics` at all.
 */
export function scrapeSpec(service: ServiceDefinition, storeScrapes = false): ServiceSpecMsg['metrics'] {
  const metrics = (service.metrics as ServiceDefinition['metrics'] | undefined) ?? null;
  if (metrics === null) return null;
  const port =
    service.driver === 'process'
      ? metrics.port
      : storeScrapes
        ? 0
        : (service.ports.find((p) => p.protocol === 'tcp' && p.container === metrics.port)?.host ?? 0);
  return { port, path: metrics.path, interval_ms: metrics.interval_ms };
}

/** What a provision job carries: the services in dependency order and what placement needs. */
export function provisionPayload(definition: StackDefinition, revision: number): JobPayload {
  const labels: Record<string, string> = {};
  for (const s of definition.services) Object.assign(labels, s.placement.labels);
  const storeScrapes = storeScrapesContainers(definition.services);
  return {
    command: {
      stack_name: definition.name,
      revision,
      services: definition.services.map((s) => toServiceSpec(s, storeScrapes)),
    },
    placement: {
      drivers: [...new Set(definition.services.map((s) => s.driver))],
      labels,
      cpu: round(definition.services.reduce((sum, s) => sum + s.resources.cpu, 0)),
      memory_bytes: definition.services.reduce((sum, s) => sum + s.resources.memory_bytes, 0),
    },
  };
}

/** `deleteVolumes`: the stack's volumes go too (`DELETE .../stacks/{id}?volumes=delete`). */
export function destroyPayload(name: string, revision: number, deleteVolumes = false): JobPayload {
  return {
    command: { stack_name: name, revision, services: [], ...(deleteVolumes ? { delete_volumes: true } : {}) },
    placement: { drivers: [], labels: {}, cpu: 0, memory_bytes: 0 },
  };
}

const round = (n: number) => Math.round(n * 1000) / 1000;
