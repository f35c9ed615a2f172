/**
 * A service as a container and back: the create options the docker driver sends for a ServiceSpec,
 * and what an inspected container says in the interface's words (for the state report and drift).
 */
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type Docker from 'dockerode';
import type {
  EffectiveConfig,
  ObservedService,
  PortSpec,
  ServiceSpec,
  StackRef,
  VolumeMount,
} from './driver.js';
import { volumeKey } from './driver.js';

/** The labels that mark a container as ours; docs/drivers.md lists what each one holds. */
export const DOCKER_LABELS = {
  managed: 'io.stack-orchestrator.managed',
  stackId: 'io.stack-orchestrator.stack-id',
  stackName: 'io.stack-orchestrator.stack-name',
  service: 'io.stack-orchestrator.service',
  digest: 'io.stack-orchestrator.digest',
  /** JSON list of the environment names the driver set, so observe can tell them from image/engine ones. */
  envKeys: 'io.stack-orchestrator.env-keys',
  /** `true` when the driver set `Cmd`; without it the container runs the image's own command. */
  commandSet: 'io.stack-orchestrator.command-set',
  /** On a volume: the volume scope it is named in (StackRef.volumeScope, or the stack id's 12 hex). */
  volumeScope: 'io.stack-orchestrator.volume-scope',
  /** On a volume: the stack's name for it (the engine's name is volumeName's). */
  volume: 'io.stack-orchestrator.volume',
  /** On a volume: `true` for a service's anonymous volume (which also carries `service`). */
  anonymous: 'io.stack-orchestrator.anonymous',
  /** Seconds a stop waits before SIGKILL, when the service set its own (stop_grace_period). */
  stopTimeout: 'io.stack-orchestrator.stop-timeout',
  /**
   * JSON `{cpu, memory_bytes}` of an uncapped service: what it counts at, reported as its actual
   * configuration while the container carries no limits, so it is not drift.
   */
  uncapped: 'io.stack-orchestrator.uncapped',
} as const;

export interface Ulimit {
  name: string;
  soft: number;
  hard: number;
}

/** `so-<first 12 hex digits of the stack id>-<service>`: unique per node, readable in `docker ps`. */
export function containerName(stackId: string, service: string): string {
  return `${stackPrefix(stackId)}-${service}`;
}

/**
 * `so-<first 12 hex digits of the stack id>`: the stack's own bridge network, on which each
 * container answers to its service name (as compose's default network does), so the monitoring
 * containers reach the services they scrape and each other.
 */
export function networkName(stackId: string): string {
  return stackPrefix(stackId);
}

const stackPrefix = (stackId: string) => `so-${stackId.replace(/-/g, '').slice(0, 12)}`;

/**
 * `so-<scope>_<volume>`: the engine's name of one of the stack's named volumes, `key` its volume
 * scope (or, without one, its id: the first 12 hex digits).
 */
export function volumeName(key: string, volume: string): string {
  return `${stackPrefix(key)}_${volume}`;
}

/** The scope label's value: the 12 hex digits the volume names carry. */
export const scopeLabel = (stack: StackRef): string => stackPrefix(volumeKey(stack)).slice(3);

/**
 * `so-<12 hex>_<service>_anon_<first 12 hex of sha256(target)>`: a service's anonymous volume at
 * `target`, named so that the container replacing this one mounts the same volume (Compose
 * recreates a container "with the previous container's anonymous volumes").
 */
export function anonymousVolumeName(key: string, service: string, target: string): string {
  const hash = createHash('sha256').update(target).digest('hex').slice(0, 12);
  return `${stackPrefix(key)}_${service}_anon_${hash}`;
}

/** The engine volume a `volume` mount uses, with the labels it is created with when missing. */
export interface VolumeToCreate {
  name: string;
  labels: Record<string, string>;
}

/** The engine volumes `spec` mounts (named and anonymous), to create before the container. */
export function volumesOf(stack: StackRef, spec: ServiceSpec): VolumeToCreate[] {
  return (spec.volumes ?? [])
    .filter((v) => v.type === 'volume')
    .map((v) => {
      const labels: Record<string, string> = {
        [DOCKER_LABELS.managed]: 'true',
        [DOCKER_LABELS.stackId]: stack.id,
        [DOCKER_LABELS.stackName]: stack.name,
        [DOCKER_LABELS.volumeScope]: scopeLabel(stack),
      };
      const key = volumeKey(stack);
      if (v.source)
        return {
          name: volumeName(key, v.source),
          labels: { ...labels, [DOCKER_LABELS.volume]: v.source },
        };
      return {
        name: anonymousVolumeName(key, spec.name, v.target),
        labels: {
          ...labels,
          [DOCKER_LABELS.volume]: anonymousVolumeName(key, spec.name, v.target),
          [DOCKER_LABELS.anonymous]: 'true',
          [DOCKER_LABELS.service]: spec.name,
        },
      };
    });
}

/** The engine's mount for one of the service's volumes (HostConfig.Mounts). */
function mount(stack: StackRef, service: string, v: VolumeMount): Docker.MountSettings {
  switch (v.type) {
    case 'volume':
      return {
        Type: 'volume',
        Source: v.source
          ? volumeName(volumeKey(stack), v.source)
          : anonymousVolumeName(volumeKey(stack), service, v.target),
        Target: v.target,
        ReadOnly: v.read_only,
      };
    case 'bind':
      return { Type: 'bind', Source: v.source, Target: v.target, ReadOnly: v.read_only };
    case 'tmpfs':
      return {
        Type: 'tmpfs',
        Source: '',
        Target: v.target,
        ReadOnly: v.read_only,
        // Typed with a required Mode by @types/dockerode; the engine's default (1777) stays.
        ...(v.size_bytes > 0
          ? { TmpfsOptions: { SizeBytes: v.size_bytes } as Docker.MountSettings['TmpfsOptions'] }
          : {}),
      };
  }
}

/** The agent's ulimits with the service's over them (the service wins per name). */
export function mergeUlimits(agent: Ulimit[], service: Ulimit[]): Ulimit[] {
  const merged = new Map(agent.map((u) => [u.name, u]));
  for (const u of service) merged.set(u.name, u);
  return [...merged.values()];
}

/** The service's own stop timeout in seconds (its stop_grace_period), or undefined for the driver's. */
export function stopTimeoutOf(spec: ServiceSpec): number | undefined {
  const ms = spec.container?.stop_grace_period_ms ?? 0;
  return ms > 0 ? Math.ceil(ms / 1000) : undefined;
}

const ZERO_TIME = '0001-01-01T00:00:00Z';

/** The engine's create options for one service (docs/drivers.md, "Container configuration"). */
export function createOptions(
  stack: StackRef,
  spec: ServiceSpec,
  name: string,
  host: { publishAddress: string; ulimits: Ulimit[] },
): Docker.ContainerCreateOptions {
  const c = spec.container ?? null;
  const exposed: Record<string, object> = {};
  const bindings: Record<string, { HostIp: string; HostPort: string }[]> = {};
  for (const port of spec.ports) {
    const key = `${port.container}/${port.protocol}`;
    exposed[key] = {};
    // Host port 0 lets the engine pick one, as `docker run -p <container>`.
    (bindings[key] ??= []).push({
      HostIp: port.address || host.publishAddress,
      HostPort: port.host ? String(port.host) : '',
    });
  }
  for (const port of c?.expose ?? []) exposed[`${port}/tcp`] ??= {};
  const envKeys = Object.keys(spec.env).sort();
  const network = networkName(stack.id);
  const ulimits = mergeUlimits(host.ulimits, c?.ulimits ?? []);
  const mounts = (spec.volumes ?? []).map((v) => mount(stack, spec.name, v));
  const stopTimeout = stopTimeoutOf(spec);
  const uncapped = c?.uncapped === true;
  const cpuCap = uncapped ? (c.cpu_limit ?? 0) : spec.cpu;
  const memoryCap = uncapped ? (c.memory_limit_bytes ?? 0) : spec.memory_bytes;
  return {
    name,
    Image: spec.image,
    ...(spec.command.length > 0 ? { Cmd: spec.command } : {}),
    ...(c?.entrypoint_set ? { Entrypoint: c.entrypoint } : {}),
    ...(c?.user ? { User: c.user } : {}),
    ...(c?.working_dir ? { WorkingDir: c.working_dir } : {}),
    ...(c?.hostname ? { Hostname: c.hostname } : {}),
    ...(c?.stop_signal ? { StopSignal: c.stop_signal } : {}),
    ...(stopTimeout !== undefined ? { StopTimeout: stopTimeout } : {}),
    Env: envKeys.map((key) => `${key}=${spec.env[key]}`),
    Labels: {
      // The service's own first: ours win on a clash.
      ...(c?.labels ?? {}),
      [DOCKER_LABELS.managed]: 'true',
      [DOCKER_LABELS.stackId]: stack.id,
      [DOCKER_LABELS.stackName]: stack.name,
      [DOCKER_LABELS.service]: spec.name,
      [DOCKER_LABELS.digest]: spec.digest,
      [DOCKER_LABELS.envKeys]: JSON.stringify(envKeys),
      ...(spec.command.length > 0 ? { [DOCKER_LABELS.commandSet]: 'true' } : {}),
      ...(stopTimeout !== undefined ? { [DOCKER_LABELS.stopTimeout]: String(stopTimeout) } : {}),
      ...(uncapped
        ? {
            [DOCKER_LABELS.uncapped]: JSON.stringify({
              cpu: spec.cpu,
              memory_bytes: spec.memory_bytes,
              cpu_limit: c.cpu_limit,
              memory_limit_bytes: c.memory_limit_bytes,
            }),
          }
        : {}),
    },
    ExposedPorts: exposed,
    NetworkingConfig: {
      EndpointsConfig: {
        [network]: { Aliases: [spec.name, ...(c?.aliases ?? []).filter((a) => a !== spec.name)] },
      },
    },
    HostConfig: {
      NetworkMode: network,
      PortBindings: bindings,
      // Uncapped: cpu and memory are what the service counts at in placement, not limits.
      // Uncapped (a Compose service): cpu and memory_bytes only count; its own limits, if any, cap it.
      ...(cpuCap > 0 ? { NanoCpus: Math.round(cpuCap * 1e9) } : {}),
      ...(memoryCap > 0 ? { Memory: memoryCap } : {}),
      ...(c?.memory_reservation_bytes ? { MemoryReservation: c.memory_reservation_bytes } : {}),
      RestartPolicy: restartPolicy(spec.restart, c?.restart_max_retries ?? 0),
      ...(ulimits.length > 0
        ? { Ulimits: ulimits.map((u) => ({ Name: u.name, Soft: u.soft, Hard: u.hard })) }
        : {}),
      ...(mounts.length > 0 ? { Mounts: mounts } : {}),
      ...(c?.extra_hosts.length ? { ExtraHosts: c.extra_hosts } : {}),
      ...(c?.init ? { Init: true } : {}),
      ...(c?.read_only ? { ReadonlyRootfs: true } : {}),
      ...(c?.shm_size_bytes ? { ShmSize: c.shm_size_bytes } : {}),
    },
  };
}

/** What one inspected container is, in the interface's words (docs/drivers.md, "What observe reports"). */
export function observedService(info: Docker.ContainerInspectInfo, image: ImageDefaults): ObservedService {
  const labels = info.Config.Labels ?? {};
  return {
    stackId: labels[DOCKER_LABELS.stackId] ?? '',
    name: labels[DOCKER_LABELS.service] ?? '',
    status: normalizeStatus(info.State.Status),
    running: info.State.Running && !info.State.Paused && !info.State.Restarting,
    startedAt:
      info.State.StartedAt && info.State.StartedAt !== ZERO_TIME ? new Date(info.State.StartedAt) : null,
    digest: labels[DOCKER_LABELS.digest] ?? '',
    actual: effectiveConfig(info, image),
    restarts: info.RestartCount ?? 0,
    exitCode: info.State.Running || info.State.StartedAt === ZERO_TIME ? null : info.State.ExitCode,
  };
}

export interface ImageDefaults {
  env: Record<string, string>;
  cmd: string[];
}

/**
 * Variables the engine adds to every container on its own (podman: HOSTNAME, HOME, TERM, container;
 * Docker adds none to Config.Env, the names are harmless there). Like image defaults they are left
 * out of `actual.env` unless the driver set them.
 */
const ENGINE_ENV = new Set(['HOSTNAME', 'HOME', 'TERM', 'container']);

/** What the container really runs, in the ServiceSpec's terms, for drift. */
function effectiveConfig(info: Docker.ContainerInspectInfo, image: ImageDefaults): EffectiveConfig {
  const labels = info.Config.Labels ?? {};
  const own = new Set(parseKeys(labels[DOCKER_LABELS.envKeys]));
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(parseEnv(info.Config.Env ?? []))) {
    const imageDefault = image.env[key] === value;
    if (own.has(key) || (!imageDefault && !ENGINE_ENV.has(key))) env[key] = value;
  }
  const cmd = info.Config.Cmd ?? [];
  const command =
    labels[DOCKER_LABELS.commandSet] === 'true' || !isDeepStrictEqual(cmd, image.cmd) ? cmd : [];
  const ports: PortSpec[] = [];
  // Typed `any` by @types/dockerode; the engine sends `{"8080/tcp": [{HostIp, HostPort}] | null}`.
  const portBindings = (info.HostConfig.PortBindings ?? {}) as Record<
    string,
    { HostIp?: string; HostPort?: string }[] | null
  >;
  for (const [key, bindings] of Object.entries(portBindings)) {
    const [container, protocol] = key.split('/');
    for (const binding of bindings ?? []) {
      ports.push({
        container: Number(container),
        host: Number(binding.HostPort) || 0,
        protocol: protocol === 'udp' ? 'udp' : 'tcp',
        ...(binding.HostIp ? { address: binding.HostIp } : {}),
      });
    }
  }
  ports.sort((a, b) => a.container - b.container || a.protocol.localeCompare(b.protocol) || a.host - b.host);
  const hc = info.HostConfig;
  let cpu = hc.NanoCpus ? hc.NanoCpus / 1e9 : hc.CpuQuota && hc.CpuPeriod ? hc.CpuQuota / hc.CpuPeriod : 0;
  let memory = hc.Memory ?? 0;
  // An uncapped service runs without limits, or with its own (Compose's) limits, by design: it is
  // reported at what it counts at; limits other than its own, set behind our back, still show.
  const counted = parseCounted(labels[DOCKER_LABELS.uncapped]);
  if (counted && (cpu === 0 || Math.abs(cpu - (counted.cpu_limit ?? 0)) < 1e-9)) cpu = counted.cpu;
  if (counted && (memory === 0 || memory === (counted.memory_limit_bytes ?? 0)))
    memory = counted.memory_bytes;
  return { image: info.Config.Image, command, env, ports, cpu, memory_bytes: memory };
}

export function parseEnv(entries: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
}

function parseCounted(
  label: string | undefined,
): { cpu: number; memory_bytes: number; cpu_limit?: number; memory_limit_bytes?: number } | null {
  if (!label) return null;
  try {
    const value = JSON.parse(label) as Record<string, unknown>;
    const n = (key: string) => (typeof value[key] === 'number' ? value[key] : 0);
    return {
      cpu: n('cpu'),
      memory_bytes: n('memory_bytes'),
      cpu_limit: n('cpu_limit'),
      memory_limit_bytes: n('memory_limit_bytes'),
    };
  } catch {
    return null;
  }
}

function parseKeys(label: string | undefined): string[] {
  if (!label) return [];
  try {
    const keys: unknown = JSON.parse(label);
    return Array.isArray(keys) ? keys.filter((k): k is string => typeof k === 'string') : [];
  } catch {
    return [];
  }
}

/** `maxRetries` (0: no limit) applies to on-failure, the one policy the engine counts retries for. */
function restartPolicy(
  restart: ServiceSpec['restart'],
  maxRetries: number,
): { Name: string; MaximumRetryCount?: number } {
  switch (restart) {
    case 'always':
      return { Name: 'always' };
    case 'on-failure':
      return { Name: 'on-failure', MaximumRetryCount: maxRetries };
    case 'never':
      return { Name: 'no' };
  }
}

/** Docker's and podman's states in the interface's words (podman says stopped/configured). */
export function normalizeStatus(status: string): string {
  switch (status) {
    case 'stopped':
    case 'dead':
    case 'removing':
      return 'exited';
    case 'configured':
    case 'initialized':
      return 'created';
    default:
      return status;
  }
}
