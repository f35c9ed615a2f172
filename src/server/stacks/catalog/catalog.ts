import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { MAX_SERVICES_PER_STACK } from '../../../contracts/agent-protocol/limits.js';
import { parseDuration } from '../../common/duration.js';
import type { PortDefinition } from '../definition/definition.types.js';
import { parseCpu, parseDays, parseGi, parseMemory } from '../definition/quantities.js';

/**
 * The stack-kit catalogue: which kits and variants exist, their limits, and the services the
 * monitoring stack adds. It is data (`stackkits.json` next to this module, copied into dist by the
 * build) so a kit changes without code; this loader checks its shape once and converts units.
 */

export interface VariantLimits {
  max_services: number;
  /** Cores. */
  max_cpu_per_service: number;
  max_memory_per_service_bytes: number;
  /** Cores, summed over every service of the stack (monitoring included). */
  max_total_cpu: number;
  max_total_memory_bytes: number;
  monitoring_allowed: boolean;
}

export interface StackKitVariant {
  name: string;
  description: string;
  limits: VariantLimits;
  /** What a service that declares no `resources` (or only one of the two) gets. */
  default_resources: { cpu: number; memory_bytes: number };
}

export interface StackKit {
  name: string;
  description: string;
  variants: ReadonlyMap<string, StackKitVariant>;
}

export type MonitoringComponent = 'metrics_store' | 'log_store' | 'dashboard';

/**
 * A monitoring service as the catalogue writes it. `command` items and `env` values may carry the
 * placeholders of {@link MONITORING_PLACEHOLDERS}, filled in from the definition's `monitoring` block.
 */
export interface MonitoringServiceTemplate {
  name: string;
  component: MonitoringComponent;
  image: string;
  command: string[];
  env: Record<string, string>;
  ports: PortDefinition[];
  resources: { cpu: number; memory_bytes: number };
  health_check: { path: string; port: number; interval_ms: number } | null;
  depends_on: string[];
}

export interface Catalog {
  kits: ReadonlyMap<string, StackKit>;
  monitoring: {
    defaults: { metrics_retention_days: number; metrics_storage_gi: number; log_retention_days: number };
    services: MonitoringServiceTemplate[];
  };
}

export const MONITORING_PLACEHOLDERS = [
  'metrics_retention_days',
  'metrics_storage_gi',
  'log_retention_days',
  'admin_password_ref',
] as const;
export type MonitoringPlaceholder = (typeof MONITORING_PLACEHOLDERS)[number];

const COMPONENTS: readonly MonitoringComponent[] = ['metrics_store', 'log_store', 'dashboard'];
const NAME = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
const PLACEHOLDER = /\{\{([a-z_]+)\}\}/g;

class CatalogShapeError extends Error {
  constructor(path: string, problem: string) {
    super(`stack-kit catalogue: ${path} ${problem}`);
    this.name = 'CatalogShapeError';
  }
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function object(value: unknown, path: string): Json {
  if (!isObject(value)) throw new CatalogShapeError(path, 'must be an object');
  return value;
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '')
    throw new CatalogShapeError(path, 'must be a non-empty string');
  return value;
}

function positiveInt(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new CatalogShapeError(path, 'must be a positive integer');
  return value;
}

function cpu(value: unknown, path: string): number {
  const cores = parseCpu(value);
  if (cores === undefined) throw new CatalogShapeError(path, 'must be CPU cores (number or "500m")');
  return cores;
}

function memory(value: unknown, path: string): number {
  const bytes = parseMemory(value);
  if (bytes === undefined) throw new CatalogShapeError(path, 'must be memory (bytes or "256Mi")');
  return bytes;
}

function port(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535)
    throw new CatalogShapeError(path, 'must be a port 1-65535');
  return value;
}

function stringArray(value: unknown, path: string): string[] {
  if (!Array.isArray(value)) throw new CatalogShapeError(path, 'must be an array of strings');
  return value.map((item, i) => string(item, `${path}[${i}]`));
}

function placeholders(text: string, path: string): string {
  for (const [, name] of text.matchAll(PLACEHOLDER)) {
    if (!(MONITORING_PLACEHOLDERS as readonly string[]).includes(name))
      throw new CatalogShapeError(path, `uses the unknown placeholder {{${name}}}`);
  }
  return text;
}

function parseVariant(name: string, raw: unknown, path: string): StackKitVariant {
  const v = object(raw, path);
  const limits = object(v.limits, `${path}.limits`);
  const defaults = object(v.default_resources, `${path}.default_resources`);
  if (typeof limits.monitoring_allowed !== 'boolean')
    throw new CatalogShapeError(`${path}.limits.monitoring_allowed`, 'must be a boolean');
  const maxServices = positiveInt(limits.max_services, `${path}.limits.max_services`);
  // Job results and the keep and replace lists grow with the services: the channel bounds them.
  if (maxServices > MAX_SERVICES_PER_STACK)
    throw new CatalogShapeError(`${path}.limits.max_services`, `must be at most ${MAX_SERVICES_PER_STACK}`);
  return {
    name,
    description: typeof v.description === 'string' ? v.description : '',
    limits: {
      max_services: maxServices,
      max_cpu_per_service: cpu(limits.max_cpu_per_service, `${path}.limits.max_cpu_per_service`),
      max_memory_per_service_bytes: memory(
        limits.max_memory_per_service,
        `${path}.limits.max_memory_per_service`,
      ),
      max_total_cpu: cpu(limits.max_total_cpu, `${path}.limits.max_total_cpu`),
      max_total_memory_bytes: memory(limits.max_total_memory, `${path}.limits.max_total_memory`),
      monitoring_allowed: limits.monitoring_allowed,
    },
    default_resources: {
      cpu: cpu(defaults.cpu, `${path}.default_resources.cpu`),
      memory_bytes: memory(defaults.memory, `${path}.default_resources.memory`),
    },
  };
}

function parseTemplate(raw: unknown, path: string): MonitoringServiceTemplate {
  const t = object(raw, path);
  const name = string(t.name, `${path}.name`);
  if (!NAME.test(name)) throw new CatalogShapeError(`${path}.name`, 'must be a DNS label');
  const component = t.component as MonitoringComponent;
  if (!COMPONENTS.includes(component))
    throw new CatalogShapeError(`${path}.component`, `must be one of ${COMPONENTS.join(', ')}`);
  const env = object(t.env, `${path}.env`);
  const resources = object(t.resources, `${path}.resources`);
  if (!Array.isArray(t.ports)) throw new CatalogShapeError(`${path}.ports`, 'must be an array');
  const ports = t.ports.map((p: unknown, i): PortDefinition => {
    const o = object(p, `${path}.ports[${i}]`);
    const protocol = o.protocol ?? 'tcp';
    if (protocol !== 'tcp' && protocol !== 'udp')
      throw new CatalogShapeError(`${path}.ports[${i}].protocol`, 'must be tcp or udp');
    if (o.address !== undefined && (typeof o.address !== 'string' || isIP(o.address) === 0))
      throw new CatalogShapeError(`${path}.ports[${i}].address`, 'must be an IP address');
    return {
      container: port(o.container, `${path}.ports[${i}].container`),
      host: port(o.host ?? o.container, `${path}.ports[${i}].host`),
      protocol,
      ...(o.address !== undefined ? { address: o.address } : {}),
    };
  });
  let health_check: MonitoringServiceTemplate['health_check'] = null;
  if (t.health_check !== undefined && t.health_check !== null) {
    const h = object(t.health_check, `${path}.health_check`);
    const interval = parseDuration(string(h.interval, `${path}.health_check.interval`));
    if (interval === undefined || interval < 1000)
      throw new CatalogShapeError(`${path}.health_check.interval`, 'must be a duration of at least 1s');
    health_check = {
      path: string(h.path, `${path}.health_check.path`),
      port: port(h.port, `${path}.health_check.port`),
      interval_ms: interval,
    };
  }
  return {
    name,
    component,
    image: string(t.image, `${path}.image`),
    command: stringArray(t.command, `${path}.command`).map((arg, i) =>
      placeholders(arg, `${path}.command[${i}]`),
    ),
    env: Object.fromEntries(
      Object.entries(env).map(([key, value]) => [
        key,
        placeholders(string(value, `${path}.env.${key}`), `${path}.env.${key}`),
      ]),
    ),
    ports,
    resources: {
      cpu: cpu(resources.cpu, `${path}.resources.cpu`),
      memory_bytes: memory(resources.memory, `${path}.resources.memory`),
    },
    health_check,
    depends_on: stringArray(t.depends_on ?? [], `${path}.depends_on`),
  };
}

/** Checks and converts the catalogue's JSON; throws naming the first path that is wrong. */
export function parseCatalog(data: unknown): Catalog {
  const root = object(data, '(root)');
  const kitsRaw = object(root.kits, 'kits');
  const kits = new Map<string, StackKit>();
  for (const [kitName, kitRaw] of Object.entries(kitsRaw)) {
    if (!NAME.test(kitName)) throw new CatalogShapeError(`kits.${kitName}`, 'must be named by a DNS label');
    const kit = object(kitRaw, `kits.${kitName}`);
    const variantsRaw = object(kit.variants, `kits.${kitName}.variants`);
    const variants = new Map<string, StackKitVariant>();
    for (const [variantName, variantRaw] of Object.entries(variantsRaw)) {
      variants.set(
        variantName,
        parseVariant(variantName, variantRaw, `kits.${kitName}.variants.${variantName}`),
      );
    }
    if (!variants.has('default'))
      throw new CatalogShapeError(`kits.${kitName}.variants`, 'must include a "default" variant');
    kits.set(kitName, {
      name: kitName,
      description: typeof kit.description === 'string' ? kit.description : '',
      variants,
    });
  }
  if (kits.size === 0) throw new CatalogShapeError('kits', 'must hold at least one kit');

  const monitoring = object(root.monitoring, 'monitoring');
  const defaults = object(monitoring.defaults, 'monitoring.defaults');
  const metricsRetention = parseDays(defaults.metrics_retention);
  const metricsStorage = parseGi(defaults.metrics_storage);
  const logRetention = parseDays(defaults.log_retention);
  if (metricsRetention === undefined)
    throw new CatalogShapeError('monitoring.defaults.metrics_retention', 'must look like "15d"');
  if (metricsStorage === undefined)
    throw new CatalogShapeError('monitoring.defaults.metrics_storage', 'must look like "10Gi"');
  if (logRetention === undefined)
    throw new CatalogShapeError('monitoring.defaults.log_retention', 'must look like "7d"');
  if (!Array.isArray(monitoring.services))
    throw new CatalogShapeError('monitoring.services', 'must be an array');
  const services = monitoring.services.map((s: unknown, i) => parseTemplate(s, `monitoring.services[${i}]`));
  for (const component of COMPONENTS) {
    if (services.filter((s) => s.component === component).length !== 1)
      throw new CatalogShapeError('monitoring.services', `must hold exactly one ${component} service`);
  }
  const names = new Set(services.map((s) => s.name));
  if (names.size !== services.length)
    throw new CatalogShapeError('monitoring.services', 'must have unique names');
  for (const s of services) {
    for (const dep of s.depends_on) {
      if (!names.has(dep) || dep === s.name)
        throw new CatalogShapeError(
          `monitoring.services.${s.name}.depends_on`,
          `names an unknown service ${dep}`,
        );
    }
  }
  return {
    kits,
    monitoring: {
      defaults: {
        metrics_retention_days: metricsRetention,
        metrics_storage_gi: metricsStorage,
        log_retention_days: logRetention,
      },
      services,
    },
  };
}

const CATALOG_URL = new URL('./stackkits.json', import.meta.url);

/** Reads and checks a catalogue file (the bundled one by default). */
export function loadCatalog(url: URL = CATALOG_URL): Catalog {
  return parseCatalog(JSON.parse(readFileSync(url, 'utf8')) as unknown);
}

let bundled: Catalog | undefined;

/** The bundled catalogue, read once. */
export function getCatalog(): Catalog {
  return (bundled ??= loadCatalog());
}

/** The names of every kit, sorted, for messages. */
export const kitNames = (catalog: Catalog): string[] => [...catalog.kits.keys()].sort();
