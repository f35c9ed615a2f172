import type { MetricsSpecMsg, ServiceSpecMsg } from '../contracts/agent-protocol/index.js';
import type { HealthCheckSpec, ServiceSpec } from './drivers/driver.js';

const ENV_REFERENCE = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/**
 * The services of a job as drivers take them. `${NAME}` values come from the agent's environment; a
 * missing one throws (naming it), so the whole job fails before anything changes.
 */
export function resolveServices(
  services: ServiceSpecMsg[],
  agentEnv: Readonly<Record<string, string | undefined>>,
): ServiceSpec[] {
  const specs: ServiceSpec[] = [];
  for (const s of services) {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.env ?? {})) {
      const ref = ENV_REFERENCE.exec(v);
      if (!ref) {
        env[k] = v;
        continue;
      }
      const value = agentEnv[ref[1]];
      if (value === undefined)
        throw new Error(`${s.name}: environment variable ${ref[1]} is not set on the agent`);
      env[k] = value;
    }
    specs.push({
      name: s.name,
      image: s.image,
      command: s.command ?? [],
      env,
      ports: (s.ports ?? []).map((p) => ({
        container: p.container,
        host: p.host,
        protocol: p.protocol === 'udp' ? 'udp' : 'tcp',
        // The node address to publish on: dropped here, `127.0.0.1:8080:80` was published on every interface.
        ...(p.address ? { address: p.address } : {}),
      })),
      cpu: s.cpu,
      memory_bytes: s.memory_bytes,
      restart: s.restart === 'always' || s.restart === 'never' ? s.restart : 'on-failure',
      health_check: s.health_check ?? null,
      digest: s.digest,
      files: s.files ?? [],
      start_conditions: s.start_conditions ?? [],
      volumes: (s.volumes ?? []).map((v) => volumeMount(s.name, v)),
      container: s.container ?? null,
    });
  }
  return specs;
}

/** A mount of an unknown type throws: a driver must not drop what it does not know. */
function volumeMount(
  service: string,
  v: NonNullable<ServiceSpecMsg['volumes']>[number],
): NonNullable<ServiceSpec['volumes']>[number] {
  if (v.type !== 'volume' && v.type !== 'bind' && v.type !== 'tmpfs')
    throw new Error(`${service}: unknown mount type ${JSON.stringify(v.type)} for ${v.target}`);
  return { ...v, type: v.type, size_bytes: v.size_bytes || 0 };
}

/** The health checks of the services that have one (name -> check): an HTTP port or a command. */
export function checksOf(services: ServiceSpecMsg[]): Map<string, HealthCheckSpec> {
  const checks = new Map<string, HealthCheckSpec>();
  for (const s of services)
    if (s.health_check && hasCheck(s.health_check)) checks.set(s.name, s.health_check);
  return checks;
}

function hasCheck(check: HealthCheckSpec): boolean {
  return check.type === 'command' ? (check.test?.length ?? 0) > 0 : check.port > 0;
}

/** The metrics endpoints the agent scrapes (name -> endpoint): those with a node port. */
export function scrapeTargetsOf(services: ServiceSpecMsg[]): Map<string, MetricsSpecMsg> {
  const targets = new Map<string, MetricsSpecMsg>();
  for (const s of services) if (s.metrics && s.metrics.port > 0) targets.set(s.name, s.metrics);
  return targets;
}
