/**
 * A service as a container and back: the create options the docker driver sends for a ServiceSpec,
 * and what an inspected container says in the interface's words (for the state report and drift).
 */
import { isDeepStrictEqual } from 'node:util';
import type Docker from 'dockerode';
import type { EffectiveConfig, ObservedService, PortSpec, ServiceSpec, StackRef } from './driver.js';

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
} as const;

export interface Ulimit {
  name: string;
  soft: number;
  hard: number;
}

/** `so-<first 12 hex digits of the stack id>-<service>`: unique per node, readable in `docker ps`. */
export function containerName(stackId: string, service: string): string {
  return `so-${stackId.replace(/-/g, '').slice(0, 12)}-${service}`;
}

/**
 * `so-<first 12 hex digits of the stack id>`: the stack's own bridge network, on which each
 * container answers to its service name (as compose's default network does), so the monitoring
 * containers reach the services they scrape and each other.
 */
export function networkName(stackId: string): string {
  return `so-${stackId.replace(/-/g, '').slice(0, 12)}`;
}

const ZERO_TIME = '0001-01-01T00:00:00Z';

/** The engine's create options for one service (docs/drivers.md, "Container configuration"). */
export function createOptions(
  stack: StackRef,
  spec: ServiceSpec,
  name: string,
  host: { publishAddress: string; ulimits: Ulimit[] },
): Docker.ContainerCreateOptions {
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
  const envKeys = Object.keys(spec.env).sort();
  const network = networkName(stack.id);
  return {
    name,
    Image: spec.image,
    ...(spec.command.length > 0 ? { Cmd: spec.command } : {}),
    Env: envKeys.map((key) => `${key}=${spec.env[key]}`),
    Labels: {
      [DOCKER_LABELS.managed]: 'true',
      [DOCKER_LABELS.stackId]: stack.id,
      [DOCKER_LABELS.stackName]: stack.name,
      [DOCKER_LABELS.service]: spec.name,
      [DOCKER_LABELS.digest]: spec.digest,
      [DOCKER_LABELS.envKeys]: JSON.stringify(envKeys),
      ...(spec.command.length > 0 ? { [DOCKER_LABELS.commandSet]: 'true' } : {}),
    },
    ExposedPorts: exposed,
    NetworkingConfig: { EndpointsConfig: { [network]: { Aliases: [spec.name] } } },
    HostConfig: {
      NetworkMode: network,
      PortBindings: bindings,
      ...(spec.cpu > 0 ? { NanoCpus: Math.round(spec.cpu * 1e9) } : {}),
      ...(spec.memory_bytes > 0 ? { Memory: spec.memory_bytes } : {}),
      RestartPolicy: restartPolicy(spec.restart),
      ...(host.ulimits.length > 0
        ? { Ulimits: host.ulimits.map((u) => ({ Name: u.name, Soft: u.soft, Hard: u.hard })) }
        : {}),
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
  const cpu = hc.NanoCpus ? hc.NanoCpus / 1e9 : hc.CpuQuota && hc.CpuPeriod ? hc.CpuQuota / hc.CpuPeriod : 0;
  return { image: info.Config.Image, command, env, ports, cpu, memory_bytes: hc.Memory ?? 0 };
}

export function parseEnv(entries: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of entries) {
    const eq = entry.indexOf('=');
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return env;
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

function restartPolicy(restart: ServiceSpec['restart']): { Name: string; MaximumRetryCount?: number } {
  switch (restart) {
    case 'always':
      return { Name: 'always' };
    case 'on-failure':
      return { Name: 'on-failure', MaximumRetryCount: 0 };
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
