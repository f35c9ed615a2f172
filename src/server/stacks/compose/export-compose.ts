import { dump } from 'js-yaml';
import type { ServiceDefinition, StackDefinition } from '../definition/definition.types.js';

/**
 * A normalized definition as a Compose file (`GET .../stacks/{id}/definition?format=compose`): what
 * the stack runs, with interpolation already applied, in the keys Compose has had since file format
 * 3.8 so that `docker-compose config` 1.29 reads it as well as `docker compose` does. What Compose
 * cannot say is kept under `x-stack-orchestrator` keys, which Compose ignores: process services
 * (no image), HTTP health checks, the stack kit, placement labels and the tunnel's `public` port.
 */
export function exportCompose(definition: StackDefinition): string {
  const services: Record<string, unknown> = {};
  const processes: Record<string, unknown> = {};
  const volumes: Record<string, unknown> = {};
  for (const s of definition.services) {
    if (s.origin === 'monitoring') continue;
    if (s.driver === 'process' || !s.image) {
      processes[s.name] = processService(s);
      continue;
    }
    services[s.name] = containerService(s);
  }
  for (const v of definition.volumes ?? []) {
    volumes[v.name] = Object.keys(v.labels).length > 0 ? { labels: v.labels } : {};
  }
  const extension: Record<string, unknown> = {
    // Top-level `name` is newer than docker-compose 1.29: give it as `docker compose -p` or ?name=.
    name: definition.name,
    stackkit: definition.stackkit,
    variant: definition.variant,
  };
  if (Object.keys(processes).length > 0) extension.process_services = processes;
  if (definition.monitoring.enabled) extension.monitoring = definition.monitoring;
  const file: Record<string, unknown> = {
    services,
    ...(Object.keys(volumes).length > 0 ? { volumes } : {}),
    'x-stack-orchestrator': extension,
  };
  if (Object.keys(services).length === 0) {
    // Compose needs a service; a stack of processes only is all in the extension.
    file.services = {};
  }
  return dump(escapeDollars(file), { lineWidth: -1, noRefs: true });
}

function containerService(s: ServiceDefinition): unknown {
  const c = s.container ?? {};
  const out: Record<string, unknown> = { image: s.image };
  if (c.entrypoint !== undefined) out.entrypoint = c.entrypoint;
  if (s.command.length > 0) out.command = s.command;
  if (Object.keys(s.env).length > 0) out.environment = { ...s.env };
  if (s.ports.length > 0) {
    // The short form: the long one's host_ip is newer than docker-compose 1.29.
    out.ports = s.ports.map((p) => {
      const address = p.address ? `${p.address.includes(':') ? `[${p.address}]` : p.address}:` : '';
      return `${p.host > 0 ? `${address}${p.host}:` : ''}${p.container}/${p.protocol}`;
    });
  }
  if (c.expose?.length) out.expose = c.expose.map(String);
  const mounts = (s.volumes ?? []).map((v) => {
    if (v.type === 'tmpfs') {
      return { type: 'tmpfs', target: v.target, ...(v.size_bytes ? { tmpfs: { size: v.size_bytes } } : {}) };
    }
    return {
      type: v.type,
      ...(v.source ? { source: v.source } : {}),
      target: v.target,
      ...(v.read_only ? { read_only: true } : {}),
    };
  });
  if (mounts.length > 0) out.volumes = mounts;
  const files = (s.files ?? []).filter((f) => f.credential === null);
  if (files.length > 0) {
    // Compose 1.29 has no inline content: a file's text is kept in the extension, and the config
    // names the path the orchestrator places it at.
    out['x-files'] = files.map((f) => ({ target: f.path, mode: f.mode, content: f.content }));
  }
  if (s.health_check) {
    const h = s.health_check;
    if (h.type === 'command' && h.test) {
      out.healthcheck = {
        test: ['CMD', ...h.test],
        interval: `${h.interval_ms}ms`,
        timeout: `${h.timeout_ms ?? 30_000}ms`,
        retries: h.retries ?? 3,
        start_period: `${h.start_period_ms ?? 0}ms`,
      };
    } else {
      out['x-http-health-check'] = { path: h.path, port: h.port, interval: `${h.interval_ms}ms` };
    }
  }
  if (s.depends_on.length > 0) {
    const conditions = s.start_conditions ?? {};
    out.depends_on = Object.fromEntries(
      s.depends_on.map((d) => [d, { condition: conditions[d]?.condition ?? 'service_started' }]),
    );
  }
  out.restart =
    s.restart === 'never'
      ? 'no'
      : s.restart === 'on-failure' && c.restart_max_retries
        ? `on-failure:${c.restart_max_retries}`
        : s.restart;
  if (c.user) out.user = c.user;
  if (c.working_dir) out.working_dir = c.working_dir;
  if (c.hostname) out.hostname = c.hostname;
  if (c.labels && Object.keys(c.labels).length > 0) out.labels = c.labels;
  if (c.aliases?.length) out.networks = { default: { aliases: c.aliases } };
  if (c.extra_hosts?.length) out.extra_hosts = c.extra_hosts;
  if (c.stop_signal) out.stop_signal = c.stop_signal;
  if (c.stop_grace_period_ms !== undefined) out.stop_grace_period = `${c.stop_grace_period_ms}ms`;
  if (c.init !== undefined) out.init = c.init;
  if (c.read_only !== undefined) out.read_only = c.read_only;
  if (c.shm_size_bytes) out.shm_size = c.shm_size_bytes;
  if (c.ulimits?.length)
    out.ulimits = Object.fromEntries(c.ulimits.map((u) => [u.name, { soft: u.soft, hard: u.hard }]));
  const limits =
    s.resources.capped === false
      ? {
          ...(c.cpu_limit ? { cpus: String(c.cpu_limit) } : {}),
          ...(c.memory_limit_bytes ? { memory: String(c.memory_limit_bytes) } : {}),
        }
      : {
          ...(s.resources.cpu > 0 ? { cpus: String(s.resources.cpu) } : {}),
          ...(s.resources.memory_bytes > 0 ? { memory: String(s.resources.memory_bytes) } : {}),
        };
  const reservations = {
    ...(s.resources.cpu > 0 ? { cpus: String(s.resources.cpu) } : {}),
    ...(s.resources.memory_bytes > 0 ? { memory: String(s.resources.memory_bytes) } : {}),
  };
  out.deploy = {
    resources: {
      ...(Object.keys(limits).length > 0 ? { limits } : {}),
      ...(Object.keys(reservations).length > 0 ? { reservations } : {}),
    },
  };
  const extra: Record<string, unknown> = {};
  if (Object.keys(s.placement.labels).length > 0) extra.placement = s.placement;
  if (s.public) extra.public = s.public;
  if (s.metrics) extra.metrics = s.metrics;
  if (Object.keys(extra).length > 0) out['x-stack-orchestrator'] = extra;
  return out;
}

function processService(s: ServiceDefinition): unknown {
  return {
    command: s.command,
    ...(Object.keys(s.env).length > 0 ? { env: s.env } : {}),
    ...(s.ports.length > 0 ? { ports: s.ports.map((p) => p.container) } : {}),
    resources: { cpu: s.resources.cpu, memory: s.resources.memory_bytes },
    ...(s.health_check ? { health_check: s.health_check } : {}),
    ...(s.depends_on.length > 0 ? { depends_on: s.depends_on } : {}),
    restart: s.restart,
  };
}

/**
 * The values as Compose will read them: it interpolates every string again, so a `$` that the
 * stack runs with is written `$$` (interpolation was applied when the stack was read).
 */
function escapeDollars(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(/\$/g, '$$$$');
  if (Array.isArray(value)) return value.map(escapeDollars);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escapeDollars(v)]));
  }
  return value;
}
