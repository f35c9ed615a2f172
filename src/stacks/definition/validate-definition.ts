import { parseDuration } from '../../common/duration.js';
import {
  MAX_COMMAND_ARG_BYTES,
  MAX_ENV_NAME_BYTES,
  MAX_ENV_PER_SERVICE,
  MAX_ENV_VALUE_BYTES,
  MAX_STACK_SPEC_BYTES,
  stackSpecBytes,
  utf8Bytes,
} from '../../agent-protocol/limits.js';
import { kitNames, getCatalog, type Catalog, type StackKitVariant } from '../catalog/catalog.js';
import { toServiceSpec } from '../service-spec.js';
import type {
  HealthCheckDefinition,
  MonitoringDefinition,
  PortDefinition,
  RestartPolicy,
  ServiceDefinition,
  StackDefinition,
  ValidationCategory,
  ValidationIssue,
  ValidationResult,
} from './definition.types.js';
import { formatBytes, formatCpu, parseCpu, parseDays, parseGi, parseMemory } from './quantities.js';
import { YamlTreeError, parseYamlTree, type Position, type YamlMap, type YamlNode } from './yaml-tree.js';

/**
 * Validates a stack definition file in one pass: every problem is reported with its path, category
 * and 1-based source position, and a valid file becomes the normalized {@link StackDefinition}.
 * Pure and synchronous; the safety limits of the YAML layer are in yaml-tree.ts.
 *
 * Messages never repeat a value from the file other than names (stack, kit, variant, service and
 * key names), so a secret written in the wrong place does not travel on in an error body or a log.
 */

/** RFC 1123 label as the contract narrows it: starts with a letter. */
const DNS_LABEL = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
const DNS_LABEL_RULE =
  'a DNS label: 1-63 lower-case letters, digits and "-", starting with a letter and not ending with "-"';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ENV_REF = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;
/** Same rule as worker labels (workers/labels.ts), so placement can match them. */
const LABEL_KEY = /^[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?$/;
const MAX_LABEL_VALUE = 253;
const MAX_IMAGE = 255;
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const HOST =
  '[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::\\d+)?';
/** A container image reference: `[registry[:port]/]path[:tag][@algo:hex]`. */
const IMAGE = new RegExp(
  `^(?:${HOST}/)?${COMPONENT}(?:/${COMPONENT})*(?::\\w[\\w.-]{0,127})?(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$`,
);
const DURATION = /^(\d+(ms|s|m|h))+$/;
const MIN_INTERVAL_MS = 1000;
const MAX_INTERVAL_MS = 3_600_000;
const PORT_TEXT = /^(?:(\d{1,5}):)?(\d{1,5})(?:\/([a-z]+))?$/;
/** Problems reported per list (errors, warnings); a hostile file could otherwise make thousands. */
export const MAX_ISSUES = 200;
const MAX_CYCLES_REPORTED = 20;
const RESTART: readonly RestartPolicy[] = ['always', 'on-failure', 'never'];

const TOP_KEYS = ['name', 'stackkit', 'variant', 'services', 'monitoring'];
const SERVICE_KEYS = [
  'image',
  'command',
  'ports',
  'env',
  'resources',
  'health_check',
  'depends_on',
  'placement',
  'restart',
];

class Issues {
  readonly errors: ValidationIssue[] = [];
  readonly warnings: ValidationIssue[] = [];

  error(path: string, category: ValidationCategory, message: string, at: Position | null): void {
    this.errors.push({ path, category, message, line: at?.line ?? null, column: at?.column ?? null });
  }

  warn(path: string, message: string, at: Position | null): void {
    this.warnings.push({
      path,
      category: 'invalid_value',
      message,
      line: at?.line ?? null,
      column: at?.column ?? null,
    });
  }
}

const isNull = (node: YamlNode | undefined): boolean =>
  node === undefined || (node.kind === 'scalar' && node.value === null);

const describe = (node: YamlNode): string =>
  node.kind === 'map'
    ? 'a mapping'
    : node.kind === 'seq'
      ? 'a list'
      : node.value === null
        ? 'empty'
        : `a ${typeof node.value}`;

const join = (path: string, key: string | number): string => (path ? `${path}.${key}` : String(key));

/** Unknown keys are warnings so older services read newer files; `x-` keys hold anchors and are silent. */
function warnUnknownKeys(map: YamlMap, allowed: readonly string[], path: string, issues: Issues): void {
  for (const [key, entry] of map.entries) {
    if (allowed.includes(key) || key.startsWith('x-')) continue;
    issues.warn(join(path, key), `unknown key "${key}" is ignored`, entry.key.pos);
  }
}

/** A mapping, or null (after reporting) for anything else; an empty value reads as an empty mapping. */
function asMap(node: YamlNode, path: string, issues: Issues, what: string): YamlMap | null {
  if (node.kind === 'map') return node;
  if (node.kind === 'scalar' && node.value === null)
    return { kind: 'map', entries: new Map(), pos: node.pos, size: 1, height: 0 };
  issues.error(path, 'invalid_value', `${what} must be a mapping, not ${describe(node)}`, node.pos);
  return null;
}

/** A string value; numbers and booleans are refused where text is expected (quote them). */
function asString(node: YamlNode, path: string, issues: Issues, what: string): string | undefined {
  if (node.kind === 'scalar' && typeof node.value === 'string') return node.value;
  issues.error(path, 'invalid_value', `${what} must be a string, not ${describe(node)}`, node.pos);
  return undefined;
}

/** A scalar as text, as written (`8080`, `true`, `1.0`): for env values, arguments and labels. */
function asText(node: YamlNode): string | undefined {
  if (node.kind !== 'scalar' || node.value === null) return undefined;
  return typeof node.value === 'string' ? node.value : node.text;
}

function asBoolean(node: YamlNode, path: string, issues: Issues): boolean | undefined {
  if (node.kind === 'scalar' && typeof node.value === 'boolean') return node.value;
  const hint =
    node.kind === 'scalar' && typeof node.value === 'string' ? ' (yes/no/on/off are text in YAML 1.2)' : '';
  issues.error(
    path,
    'invalid_value',
    `${path} must be true or false, not ${describe(node)}${hint}`,
    node.pos,
  );
  return undefined;
}

const isPort = (n: number): boolean => Number.isInteger(n) && n >= 1 && n <= 65535;

/** Duration text with its units: a bare number, which could mean seconds or milliseconds, is refused. */
function parseInterval(text: string): number | undefined {
  return DURATION.test(text) ? parseDuration(text) : undefined;
}

interface PortUse {
  service: string;
  port: PortDefinition;
  at: Position | null;
  path: string;
}

interface DependencyUse {
  name: string;
  at: Position;
  path: string;
}

interface ParsedService {
  def: ServiceDefinition;
  ports: PortUse[];
  dependencies: DependencyUse[];
}

const byPosition = (a: ValidationIssue, b: ValidationIssue): number =>
  (a.line ?? Infinity) - (b.line ?? Infinity) || (a.column ?? Infinity) - (b.column ?? Infinity);

/** Sorted by position; past {@link MAX_ISSUES}, one last item says how many more there are. */
function capped(issues: ValidationIssue[], what: string): ValidationIssue[] {
  const sorted = [...issues].sort(byPosition);
  if (sorted.length <= MAX_ISSUES) return sorted;
  const rest = sorted.length - MAX_ISSUES;
  return [
    ...sorted.slice(0, MAX_ISSUES),
    {
      path: '',
      category: 'invalid_value',
      message: `${rest} more ${what} not listed; fix the ones above first`,
      line: null,
      column: null,
    },
  ];
}

class DefinitionValidator {
  private readonly issues = new Issues();
  private variant: StackKitVariant | null = null;
  private kitName = '';
  private variantName = 'default';

  constructor(private readonly catalog: Catalog) {}

  run(root: YamlNode | null): ValidationResult {
    const top = root === null ? this.emptyRoot() : root;
    if (top.kind !== 'map') {
      this.issues.error(
        '',
        'invalid_value',
        `a stack definition is a mapping with name, stackkit and services, not ${describe(top)}`,
        top.pos,
      );
      return this.result(null);
    }
    warnUnknownKeys(top, TOP_KEYS, '', this.issues);

    const name = this.stackName(top);
    this.stackKit(top);
    const monitoring = this.monitoring(top);
    const services = this.services(top, monitoring);
    if (services === null || name === undefined) return this.result(null);
    const ordered = this.dependencyOrder(services);
    if (ordered === null) return this.result(null);
    return this.result({
      name,
      stackkit: this.kitName,
      variant: this.variantName,
      services: ordered,
      monitoring,
    });
  }

  private emptyRoot(): YamlMap {
    return { kind: 'map', entries: new Map(), pos: { line: 1, column: 1 }, size: 1, height: 0 };
  }

  private result(definition: StackDefinition | null): ValidationResult {
    const errors = capped(this.issues.errors, 'errors');
    const warnings = capped(this.issues.warnings, 'warnings');
    if (definition === null || errors.length > 0) return { kind: 'invalid', errors, warnings };
    return { kind: 'valid', definition, warnings };
  }

  /** A required key: reports it missing at its parent mapping (or at its key when empty). */
  private required(map: YamlMap, key: string, path: string, message: string): YamlNode | undefined {
    const entry = map.entries.get(key);
    if (entry === undefined || isNull(entry.value)) {
      this.issues.error(path, 'missing_required_field', message, entry?.key.pos ?? map.pos);
      return undefined;
    }
    return entry.value;
  }

  private stackName(top: YamlMap): string | undefined {
    const node = this.required(top, 'name', 'name', 'name is required: the stack name, a DNS label');
    if (node === undefined) return undefined;
    const name = asString(node, 'name', this.issues, 'name');
    if (name === undefined) return undefined;
    if (!DNS_LABEL.test(name)) {
      this.issues.error('name', 'invalid_value', `the stack name must be ${DNS_LABEL_RULE}`, node.pos);
      return undefined;
    }
    return name;
  }

  private stackKit(top: YamlMap): void {
    const supported = kitNames(this.catalog).join(', ');
    const kitNode = this.required(
      top,
      'stackkit',
      'stackkit',
      `stackkit is required; supported stack kits: ${supported}`,
    );
    const variantNode = top.entries.get('variant')?.value;
    const variantName =
      variantNode && !isNull(variantNode)
        ? asString(variantNode, 'variant', this.issues, 'variant')
        : 'default';
    if (kitNode === undefined) return;
    const kitName = asString(kitNode, 'stackkit', this.issues, 'stackkit');
    if (kitName === undefined) return;
    const kit = this.catalog.kits.get(kitName);
    if (kit === undefined) {
      this.issues.error(
        'stackkit',
        'unsupported_stackkit',
        `stack kit "${kitName.slice(0, 63)}" is not supported; supported stack kits: ${supported}`,
        kitNode.pos,
      );
      return;
    }
    this.kitName = kitName;
    if (variantName === undefined) return;
    const variant = kit.variants.get(variantName);
    if (variant === undefined) {
      this.issues.error(
        'variant',
        'unsupported_stackkit',
        `stack kit ${kitName} has no variant "${variantName.slice(0, 63)}"; its variants: ${[...kit.variants.keys()].sort().join(', ')}`,
        variantNode?.pos ?? null,
      );
      return;
    }
    this.variantName = variantName;
    this.variant = variant;
  }

  // ---------------------------------------------------------------- monitoring

  private monitoring(top: YamlMap): MonitoringDefinition {
    const off: MonitoringDefinition = {
      enabled: false,
      metrics_store: null,
      dashboard: null,
      log_store: null,
    };
    const entry = top.entries.get('monitoring');
    if (entry === undefined) return off;
    const map = asMap(entry.value, 'monitoring', this.issues, 'monitoring');
    if (map === null) return off;
    warnUnknownKeys(map, ['enabled', 'metrics_store', 'dashboard', 'log_store'], 'monitoring', this.issues);
    const defaults = this.catalog.monitoring.defaults;

    const enabledNode = map.entries.get('enabled')?.value;
    const enabled =
      enabledNode === undefined || isNull(enabledNode)
        ? false
        : (asBoolean(enabledNode, 'monitoring.enabled', this.issues) ?? false);

    // Every block is checked even when monitoring is off: a literal password is wrong either way.
    const section = (key: string, keys: string[]): YamlMap | null => {
      const node = map.entries.get(key)?.value;
      if (node === undefined) return null;
      const m = asMap(node, `monitoring.${key}`, this.issues, `monitoring.${key}`);
      if (m !== null) warnUnknownKeys(m, keys, `monitoring.${key}`, this.issues);
      return m;
    };
    const days = (m: YamlMap | null, path: string, fallback: number): number => {
      const node = m?.entries.get('retention')?.value;
      if (node === undefined || isNull(node)) return fallback;
      const value = parseDays(node.kind === 'scalar' ? node.value : undefined);
      if (value === undefined) {
        this.issues.error(path, 'invalid_value', `${path} must be whole days such as "15d"`, node.pos);
        return fallback;
      }
      return value;
    };
    const flag = (m: YamlMap | null, path: string): boolean => {
      const node = m?.entries.get('enabled')?.value;
      if (node === undefined || isNull(node)) return true;
      return asBoolean(node, path, this.issues) ?? true;
    };

    const metricsMap = section('metrics_store', ['retention', 'storage']);
    const metricsRetention = days(
      metricsMap,
      'monitoring.metrics_store.retention',
      defaults.metrics_retention_days,
    );
    let storageGi = defaults.metrics_storage_gi;
    const storageNode = metricsMap?.entries.get('storage')?.value;
    if (storageNode !== undefined && !isNull(storageNode)) {
      const gi = parseGi(storageNode.kind === 'scalar' ? storageNode.value : undefined);
      if (gi === undefined) {
        this.issues.error(
          'monitoring.metrics_store.storage',
          'invalid_value',
          'monitoring.metrics_store.storage must be whole GiB such as "10Gi"',
          storageNode.pos,
        );
      } else storageGi = gi;
    }

    const dashboardMap = section('dashboard', ['enabled', 'admin_password']);
    const dashboardEnabled = flag(dashboardMap, 'monitoring.dashboard.enabled');
    let passwordEnv: string | null = null;
    const passwordEntry = dashboardMap?.entries.get('admin_password');
    if (passwordEntry !== undefined && !isNull(passwordEntry.value)) {
      const node = passwordEntry.value;
      const ref = node.kind === 'scalar' && typeof node.value === 'string' ? ENV_REF.exec(node.value) : null;
      if (ref === null) {
        // Never echo the value: it is most likely the password itself.
        this.issues.error(
          'monitoring.dashboard.admin_password',
          'invalid_value',
          'monitoring.dashboard.admin_password must be an environment reference such as ${GRAFANA_ADMIN_PASSWORD}, never a literal password; the agent resolves it from its environment',
          node.pos,
        );
      } else passwordEnv = ref[1];
    } else if (enabled && dashboardEnabled) {
      this.issues.error(
        'monitoring.dashboard.admin_password',
        'missing_required_field',
        'monitoring.dashboard.admin_password is required when the dashboard is enabled: an environment reference such as ${GRAFANA_ADMIN_PASSWORD}',
        passwordEntry?.key.pos ?? dashboardMap?.pos ?? map.pos,
      );
    }

    const logMap = section('log_store', ['enabled', 'retention']);
    const logEnabled = flag(logMap, 'monitoring.log_store.enabled');
    const logRetention = days(logMap, 'monitoring.log_store.retention', defaults.log_retention_days);

    if (enabled && this.variant !== null && !this.variant.limits.monitoring_allowed) {
      this.issues.error(
        'monitoring.enabled',
        'resource_constraint',
        `variant ${this.kitName}/${this.variantName} does not allow the monitoring stack`,
        enabledNode?.pos ?? map.pos,
      );
    }
    if (!enabled) return off;
    return {
      enabled: true,
      metrics_store: { retention_days: metricsRetention, storage_bytes: storageGi * 2 ** 30 },
      dashboard: { enabled: dashboardEnabled, admin_password_env: passwordEnv },
      log_store: { enabled: logEnabled, retention_days: logRetention },
    };
  }

  /** The catalogue's monitoring services, filled in from the definition's `monitoring` block. */
  private monitoringServices(mon: MonitoringDefinition): ServiceDefinition[] {
    // A variant without monitoring already has its error; its services would only add noise.
    if (!mon.enabled || this.variant?.limits.monitoring_allowed === false) return [];
    const values: Record<string, string> = {
      metrics_retention_days: String(mon.metrics_store?.retention_days ?? 0),
      metrics_storage_gi: String(Math.floor((mon.metrics_store?.storage_bytes ?? 0) / 2 ** 30)),
      log_retention_days: String(mon.log_store?.retention_days ?? 0),
      admin_password_ref: mon.dashboard?.admin_password_env ? `\${${mon.dashboard.admin_password_env}}` : '',
    };
    const fill = (text: string): string =>
      text.replace(/\{\{([a-z_]+)\}\}/g, (_, key: string) => values[key] ?? '');
    const included = this.catalog.monitoring.services.filter(
      (t) =>
        t.component === 'metrics_store' ||
        (t.component === 'dashboard' && mon.dashboard?.enabled === true) ||
        (t.component === 'log_store' && mon.log_store?.enabled === true),
    );
    const names = new Set(included.map((t) => t.name));
    return included.map((t) => ({
      name: t.name,
      image: t.image,
      command: t.command.map(fill),
      env: Object.fromEntries(Object.entries(t.env).map(([k, v]) => [k, fill(v)])),
      ports: t.ports.map((p) => ({ ...p })),
      resources: { cpu: t.resources.cpu, memory_bytes: t.resources.memory_bytes },
      health_check: t.health_check ? { ...t.health_check } : null,
      depends_on: t.depends_on.filter((d) => names.has(d)),
      placement: { labels: {} },
      restart: 'always',
      driver: 'docker',
      origin: 'monitoring',
    }));
  }

  // ---------------------------------------------------------------- services

  private services(top: YamlMap, monitoring: MonitoringDefinition): ServiceDefinition[] | null {
    const node = this.required(
      top,
      'services',
      'services',
      'services is required: a mapping of service name to service',
    );
    if (node === undefined) return null;
    const map = asMap(node, 'services', this.issues, 'services');
    if (map === null) return null;
    if (map.entries.size === 0) {
      this.issues.error('services', 'invalid_value', 'services must define at least one service', map.pos);
      return null;
    }

    const extra = this.monitoringServices(monitoring);
    const reserved = new Set(extra.map((s) => s.name));
    const parsed: ParsedService[] = [];
    for (const [name, entry] of map.entries) {
      const path = `services.${name}`;
      if (!DNS_LABEL.test(name)) {
        this.issues.error(
          path,
          'invalid_service_name',
          `service name "${name.slice(0, 63)}" is not valid: it must be ${DNS_LABEL_RULE}`,
          entry.key.pos,
        );
      } else if (reserved.has(name)) {
        this.issues.error(
          path,
          'invalid_service_name',
          `service name "${name}" is taken by the monitoring stack this definition enables; rename the service`,
          entry.key.pos,
        );
      }
      const service = this.service(name, entry.value, path);
      if (service !== null) parsed.push(service);
    }

    const all: ServiceDefinition[] = [...parsed.map((p) => p.def), ...extra];
    const known = new Set(all.map((s) => s.name));
    for (const p of parsed) {
      for (const dep of p.dependencies) {
        if (dep.name === p.def.name) {
          this.issues.error(
            dep.path,
            'invalid_value',
            `service ${p.def.name} cannot depend on itself`,
            dep.at,
          );
        } else if (!known.has(dep.name)) {
          this.issues.error(
            dep.path,
            'invalid_value',
            `service ${p.def.name} depends on "${dep.name.slice(0, 63)}", which is not a service of this stack`,
            dep.at,
          );
        }
      }
    }
    this.portConflicts(parsed, extra);
    this.cycles(parsed, known);
    this.stackLimits(all, parsed.length, map.pos);
    this.specSize(all, map.pos);
    return all;
  }

  private service(name: string, node: YamlNode, path: string): ParsedService | null {
    const map = asMap(node, path, this.issues, `service ${name}`);
    if (map === null) return null;
    warnUnknownKeys(map, SERVICE_KEYS, path, this.issues);
    const get = (key: string): YamlNode | undefined => {
      const value = map.entries.get(key)?.value;
      return value === undefined || isNull(value) ? undefined : value;
    };

    let image: string | null = null;
    const imageNode = get('image');
    if (imageNode !== undefined) {
      const text = asString(imageNode, `${path}.image`, this.issues, 'image');
      if (text !== undefined) {
        if (text.length <= MAX_IMAGE && IMAGE.test(text)) image = text;
        else
          this.issues.error(
            `${path}.image`,
            'invalid_value',
            'image must be a container image reference such as nginx:1.27 or registry.example.com/team/app:2.1',
            imageNode.pos,
          );
      }
    }

    const command: string[] = [];
    const commandNode = get('command');
    if (commandNode !== undefined) {
      if (commandNode.kind !== 'seq') {
        this.issues.error(
          `${path}.command`,
          'invalid_value',
          'command must be a list of arguments, run without a shell, e.g. ["/usr/bin/app", "--port", "8080"]',
          commandNode.pos,
        );
      } else if (commandNode.items.length === 0) {
        this.issues.error(
          `${path}.command`,
          'invalid_value',
          'command must not be an empty list',
          commandNode.pos,
        );
      } else {
        commandNode.items.forEach((item, i) => {
          const text = asText(item);
          if (text === undefined || (i === 0 && text.trim() === '')) {
            this.issues.error(
              `${path}.command.${i}`,
              'invalid_value',
              i === 0
                ? 'the first argument (the program) must be a non-empty string'
                : 'arguments must be strings',
              item.pos,
            );
          } else if (utf8Bytes(text) > MAX_COMMAND_ARG_BYTES) {
            this.issues.error(
              `${path}.command.${i}`,
              'resource_constraint',
              `an argument may take at most ${MAX_COMMAND_ARG_BYTES} bytes (UTF-8); this one takes ${utf8Bytes(text)}`,
              item.pos,
            );
          } else command.push(text);
        });
      }
    }
    if (imageNode === undefined && commandNode === undefined) {
      this.issues.error(
        `${path}.image`,
        'missing_required_field',
        `service ${name} needs image (a container, docker driver) or command (a process, process driver)`,
        map.pos,
      );
    }
    const driver = imageNode !== undefined ? 'docker' : 'process';

    const ports = this.ports(get('ports'), `${path}.ports`, name, driver);
    const env = this.env(get('env'), `${path}.env`);
    const resources = this.resources(get('resources'), `${path}.resources`);
    const health_check = this.healthCheck(get('health_check'), `${path}.health_check`, ports, driver);
    const dependencies = this.dependsOn(get('depends_on'), `${path}.depends_on`);
    const labels = this.placement(get('placement'), `${path}.placement`);

    let restart: RestartPolicy = 'on-failure';
    const restartNode = get('restart');
    if (restartNode !== undefined) {
      const value = restartNode.kind === 'scalar' ? restartNode.value : undefined;
      if (typeof value === 'string' && (RESTART as readonly string[]).includes(value))
        restart = value as RestartPolicy;
      else
        this.issues.error(
          `${path}.restart`,
          'invalid_value',
          `restart must be one of ${RESTART.join(', ')}`,
          restartNode.pos,
        );
    }

    return {
      def: {
        name,
        image,
        command,
        env,
        ports: ports.map((p) => p.port),
        resources,
        health_check,
        depends_on: [...new Set(dependencies.map((d) => d.name))],
        placement: { labels },
        restart,
        driver,
        origin: 'definition',
      },
      ports,
      dependencies,
    };
  }

  private ports(node: YamlNode | undefined, path: string, service: string, driver: string): PortUse[] {
    if (node === undefined) return [];
    if (node.kind !== 'seq') {
      this.issues.error(path, 'invalid_value', 'ports must be a list such as ["8080:80", 9090]', node.pos);
      return [];
    }
    const uses: PortUse[] = [];
    node.items.forEach((item, i) => {
      const itemPath = `${path}.${i}`;
      const port = this.port(item, itemPath);
      if (port === undefined) return;
      if (driver === 'process' && port.host !== port.container) {
        this.issues.error(
          itemPath,
          'invalid_value',
          'a process service listens on the node itself: its host port must equal its container port',
          item.pos,
        );
        return;
      }
      uses.push({ service, port, at: item.pos, path: itemPath });
    });
    return uses;
  }

  private port(item: YamlNode, path: string): PortDefinition | undefined {
    const bad = (message: string, at: Position): undefined => {
      this.issues.error(path, 'invalid_value', message, at);
      return undefined;
    };
    const range = 'ports are whole numbers from 1 to 65535';
    if (item.kind === 'scalar' && typeof item.value === 'number') {
      return isPort(item.value)
        ? { container: item.value, host: item.value, protocol: 'tcp' }
        : bad(range, item.pos);
    }
    if (item.kind === 'scalar' && typeof item.value === 'string') {
      const match = PORT_TEXT.exec(item.value);
      if (!match) return bad('a port is written "8080:80", "8080:80/udp", "80" or a number', item.pos);
      const container = Number(match[2]);
      const host = match[1] === undefined ? container : Number(match[1]);
      const protocol = match[3] ?? 'tcp';
      if (protocol !== 'tcp' && protocol !== 'udp')
        return bad('the protocol of a port is tcp or udp', item.pos);
      if (!isPort(container) || !isPort(host)) return bad(range, item.pos);
      return { container, host, protocol };
    }
    if (item.kind === 'map') {
      warnUnknownKeys(item, ['container', 'host', 'protocol'], path, this.issues);
      const number = (key: string): number | null | undefined => {
        const node = item.entries.get(key)?.value;
        if (node === undefined || isNull(node)) return null;
        if (node.kind === 'scalar' && typeof node.value === 'number' && isPort(node.value)) return node.value;
        this.issues.error(`${path}.${key}`, 'invalid_value', range, node.pos);
        return undefined;
      };
      const container = number('container');
      const host = number('host');
      let protocol: 'tcp' | 'udp' | undefined = 'tcp';
      const protocolNode = item.entries.get('protocol')?.value;
      if (protocolNode !== undefined && !isNull(protocolNode)) {
        const value = protocolNode.kind === 'scalar' ? protocolNode.value : undefined;
        if (value === 'tcp' || value === 'udp') protocol = value;
        else {
          this.issues.error(
            `${path}.protocol`,
            'invalid_value',
            'the protocol of a port is tcp or udp',
            protocolNode.pos,
          );
          protocol = undefined;
        }
      }
      if (container === null) {
        this.issues.error(
          `${path}.container`,
          'missing_required_field',
          'a port mapping needs container (the port the service listens on)',
          item.pos,
        );
        return undefined;
      }
      if (container === undefined || host === undefined || protocol === undefined) return undefined;
      return { container, host: host ?? container, protocol };
    }
    return bad(
      `a port is a number, a string such as "8080:80" or a mapping, not ${describe(item)}`,
      item.pos,
    );
  }

  private env(node: YamlNode | undefined, path: string): Record<string, string> {
    const env: Record<string, string> = {};
    if (node === undefined) return env;
    const map = asMap(node, path, this.issues, 'env');
    if (map === null) return env;
    let count = 0;
    for (const [key, entry] of map.entries) {
      const keyPath = `${path}.${key}`;
      if (count++ === MAX_ENV_PER_SERVICE) {
        // One error at the first variable too many, not one per variable past the limit.
        this.issues.error(
          keyPath,
          'resource_constraint',
          `a service may have at most ${MAX_ENV_PER_SERVICE} environment variables; this is variable ${MAX_ENV_PER_SERVICE + 1} of ${map.entries.size}`,
          entry.key.pos,
        );
        break;
      }
      if (!ENV_NAME.test(key)) {
        this.issues.error(
          keyPath,
          'invalid_value',
          'environment variable names are letters, digits and "_", not starting with a digit',
          entry.key.pos,
        );
        continue;
      }
      if (utf8Bytes(key) > MAX_ENV_NAME_BYTES) {
        this.issues.error(
          keyPath,
          'resource_constraint',
          `environment variable names are at most ${MAX_ENV_NAME_BYTES} bytes; this one has ${utf8Bytes(key)}`,
          entry.key.pos,
        );
        continue;
      }
      const text = asText(entry.value);
      if (text === undefined) {
        this.issues.error(
          keyPath,
          'invalid_value',
          entry.value.kind === 'scalar'
            ? 'give the variable a value (use "" for an empty string)'
            : `an environment value is a string or a number, not ${describe(entry.value)}`,
          entry.value.pos,
        );
        continue;
      }
      if (utf8Bytes(text) > MAX_ENV_VALUE_BYTES) {
        this.issues.error(
          keyPath,
          'resource_constraint',
          `an environment value may take at most ${MAX_ENV_VALUE_BYTES} bytes (UTF-8); this one takes ${utf8Bytes(text)}`,
          entry.value.pos,
        );
        continue;
      }
      if (!ENV_REF.test(text) && text.includes('${')) {
        this.issues.warn(
          keyPath,
          'only a whole value of the form ${NAME} is resolved from the agent environment; this value is passed literally',
          entry.value.pos,
        );
      }
      env[key] = text;
    }
    return env;
  }

  private resources(node: YamlNode | undefined, path: string): ServiceDefinition['resources'] {
    const defaults = this.variant?.default_resources ?? { cpu: 0, memory_bytes: 0 };
    let cpu = defaults.cpu;
    let memory = defaults.memory_bytes;
    if (node === undefined) return { cpu, memory_bytes: memory };
    const map = asMap(node, path, this.issues, 'resources');
    if (map === null) return { cpu, memory_bytes: memory };
    warnUnknownKeys(map, ['cpu', 'memory'], path, this.issues);
    const limits = this.variant?.limits;
    const where = `variant ${this.kitName}/${this.variantName}`;

    const cpuNode = map.entries.get('cpu')?.value;
    if (cpuNode !== undefined && !isNull(cpuNode)) {
      const value = parseCpu(cpuNode.kind === 'scalar' ? cpuNode.value : undefined);
      if (value === undefined) {
        this.issues.error(
          `${path}.cpu`,
          'invalid_value',
          'cpu is a number of cores (0.5, 2) or millicores ("500m"), at least 1m',
          cpuNode.pos,
        );
      } else {
        cpu = value;
        if (limits && value > limits.max_cpu_per_service) {
          this.issues.error(
            `${path}.cpu`,
            'resource_constraint',
            `cpu ${formatCpu(value)} exceeds the ${formatCpu(limits.max_cpu_per_service)} a service may have in ${where}`,
            cpuNode.pos,
          );
        }
      }
    }
    const memoryNode = map.entries.get('memory')?.value;
    if (memoryNode !== undefined && !isNull(memoryNode)) {
      const value = parseMemory(memoryNode.kind === 'scalar' ? memoryNode.value : undefined);
      if (value === undefined) {
        this.issues.error(
          `${path}.memory`,
          'invalid_value',
          'memory is whole bytes or a size such as "256Mi", "1Gi" or "500M"',
          memoryNode.pos,
        );
      } else {
        memory = value;
        if (limits && value > limits.max_memory_per_service_bytes) {
          this.issues.error(
            `${path}.memory`,
            'resource_constraint',
            `memory ${formatBytes(value)} exceeds the ${formatBytes(limits.max_memory_per_service_bytes)} a service may have in ${where}`,
            memoryNode.pos,
          );
        }
      }
    }
    return { cpu, memory_bytes: memory };
  }

  private healthCheck(
    node: YamlNode | undefined,
    path: string,
    ports: PortUse[],
    driver: string,
  ): HealthCheckDefinition | null {
    if (node === undefined) return null;
    const map = asMap(node, path, this.issues, 'health_check');
    if (map === null) return null;
    warnUnknownKeys(map, ['path', 'port', 'interval'], path, this.issues);
    let ok = true;

    let checkPath = '/';
    const pathNode = map.entries.get('path')?.value;
    if (pathNode !== undefined && !isNull(pathNode)) {
      const value = pathNode.kind === 'scalar' ? pathNode.value : undefined;
      if (typeof value === 'string' && value.startsWith('/') && !/\s/.test(value) && value.length <= 2048)
        checkPath = value;
      else {
        ok = false;
        this.issues.error(
          `${path}.path`,
          'invalid_value',
          'the health check path starts with "/" and has no spaces',
          pathNode.pos,
        );
      }
    }

    let port: number | undefined = ports[0]?.port.host;
    const portNode = map.entries.get('port')?.value;
    if (portNode !== undefined && !isNull(portNode)) {
      const value = portNode.kind === 'scalar' ? portNode.value : undefined;
      if (typeof value === 'number' && isPort(value)) {
        port = value;
        if (driver === 'docker' && !ports.some((p) => p.port.host === value && p.port.protocol === 'tcp')) {
          ok = false;
          this.issues.error(
            `${path}.port`,
            'invalid_value',
            'the health check connects to a host port of the node: publish it under ports',
            portNode.pos,
          );
        }
      } else {
        ok = false;
        this.issues.error(
          `${path}.port`,
          'invalid_value',
          'ports are whole numbers from 1 to 65535',
          portNode.pos,
        );
      }
    } else if (port === undefined) {
      ok = false;
      this.issues.error(
        `${path}.port`,
        'missing_required_field',
        'health_check.port is required when the service declares no ports',
        map.pos,
      );
    }

    let interval = 10_000;
    const intervalNode = map.entries.get('interval')?.value;
    if (intervalNode !== undefined && !isNull(intervalNode)) {
      const value =
        intervalNode.kind === 'scalar' && typeof intervalNode.value === 'string'
          ? parseInterval(intervalNode.value)
          : undefined;
      if (value !== undefined && value >= MIN_INTERVAL_MS && value <= MAX_INTERVAL_MS) interval = value;
      else {
        ok = false;
        this.issues.error(
          `${path}.interval`,
          'invalid_value',
          'the health check interval is a duration from 1s to 1h such as "10s", "1m" or "1m30s"',
          intervalNode.pos,
        );
      }
    }
    return ok && port !== undefined ? { path: checkPath, port, interval_ms: interval } : null;
  }

  private dependsOn(node: YamlNode | undefined, path: string): DependencyUse[] {
    if (node === undefined) return [];
    if (node.kind !== 'seq') {
      this.issues.error(path, 'invalid_value', 'depends_on is a list of service names', node.pos);
      return [];
    }
    const uses: DependencyUse[] = [];
    node.items.forEach((item, i) => {
      if (item.kind === 'scalar' && typeof item.value === 'string') {
        uses.push({ name: item.value, at: item.pos, path: `${path}.${i}` });
      } else {
        this.issues.error(`${path}.${i}`, 'invalid_value', 'depends_on items are service names', item.pos);
      }
    });
    return uses;
  }

  private placement(node: YamlNode | undefined, path: string): Record<string, string> {
    const labels: Record<string, string> = {};
    if (node === undefined) return labels;
    const map = asMap(node, path, this.issues, 'placement');
    if (map === null) return labels;
    warnUnknownKeys(map, ['labels'], path, this.issues);
    const labelsNode = map.entries.get('labels')?.value;
    if (labelsNode === undefined) return labels;
    const labelMap = asMap(labelsNode, `${path}.labels`, this.issues, 'placement.labels');
    if (labelMap === null) return labels;
    for (const [key, entry] of labelMap.entries) {
      const keyPath = `${path}.labels.${key}`;
      if (!LABEL_KEY.test(key)) {
        this.issues.error(keyPath, 'invalid_value', 'label keys are 1-63 of a-z 0-9 . _ / -', entry.key.pos);
        continue;
      }
      const text = asText(entry.value);
      if (text === undefined || text.length > MAX_LABEL_VALUE) {
        this.issues.error(
          keyPath,
          'invalid_value',
          `label values are strings of at most ${MAX_LABEL_VALUE} characters`,
          entry.value.pos,
        );
        continue;
      }
      labels[key] = text;
    }
    return labels;
  }

  // ---------------------------------------------------------------- stack-wide rules

  /** Two services cannot bind the same node port and protocol. */
  private portConflicts(parsed: ParsedService[], extra: ServiceDefinition[]): void {
    const taken = new Map<string, string>();
    for (const s of extra) {
      for (const p of s.ports) taken.set(`${p.host}/${p.protocol}`, `${s.name} (monitoring)`);
    }
    for (const use of parsed.flatMap((p) => p.ports)) {
      const key = `${use.port.host}/${use.port.protocol}`;
      const owner = taken.get(key);
      if (owner !== undefined) {
        this.issues.error(
          use.path,
          'resource_constraint',
          `host port ${key} is already used by service ${owner}`,
          use.at,
        );
      } else taken.set(key, use.service);
    }
  }

  /** Reports each dependency cycle at the dependency that closes it (depth-first, by name). */
  private cycles(parsed: ParsedService[], known: Set<string>): void {
    const edges = new Map<string, DependencyUse[]>();
    for (const p of parsed) {
      edges.set(
        p.def.name,
        p.dependencies.filter((d) => known.has(d.name) && d.name !== p.def.name),
      );
    }
    const done = new Set<string>();
    /** Services on the current path, with their index in `path`. */
    const onPath = new Map<string, number>();
    let reported = 0;
    for (const start of [...edges.keys()].sort()) {
      if (done.has(start)) continue;
      // Iterative depth-first search: the path of (service, next edge index).
      const path: { name: string; next: number }[] = [{ name: start, next: 0 }];
      onPath.set(start, 0);
      while (path.length > 0) {
        const top = path[path.length - 1];
        const out = edges.get(top.name) ?? [];
        if (top.next >= out.length) {
          done.add(top.name);
          onPath.delete(top.name);
          path.pop();
          continue;
        }
        const dep = out[top.next++];
        const at = onPath.get(dep.name);
        if (at !== undefined) {
          if (reported++ >= MAX_CYCLES_REPORTED) continue;
          const length = path.length - at;
          const names =
            length <= 8
              ? path.slice(at).map((f) => f.name)
              : [
                  ...path.slice(at, at + 4).map((f) => f.name),
                  `… ${length - 7} more …`,
                  ...path.slice(-3).map((f) => f.name),
                ];
          this.issues.error(
            dep.path,
            'invalid_value',
            `dependency cycle: ${[...names, dep.name].join(' → ')}`,
            dep.at,
          );
        } else if (!done.has(dep.name)) {
          onPath.set(dep.name, path.length);
          path.push({ name: dep.name, next: 0 });
        }
      }
    }
  }

  private stackLimits(all: ServiceDefinition[], own: number, at: Position): void {
    const variant = this.variant;
    if (variant === null) return;
    const limits = variant.limits;
    const where = `variant ${this.kitName}/${this.variantName}`;
    const fromMonitoring = all.length - own;
    const countNote = fromMonitoring > 0 ? ` (${fromMonitoring} from monitoring)` : '';
    const totalNote = fromMonitoring > 0 ? ', monitoring included' : '';
    if (all.length > limits.max_services) {
      this.issues.error(
        'services',
        'resource_constraint',
        `the stack has ${all.length} services${countNote}; ${where} allows ${limits.max_services}`,
        at,
      );
    }
    const cpu = Math.round(all.reduce((sum, s) => sum + s.resources.cpu * 1000, 0)) / 1000;
    if (cpu > limits.max_total_cpu) {
      this.issues.error(
        'services',
        'resource_constraint',
        `the services request ${formatCpu(cpu)} in total${totalNote}; ${where} allows ${formatCpu(limits.max_total_cpu)}`,
        at,
      );
    }
    const memory = all.reduce((sum, s) => sum + s.resources.memory_bytes, 0);
    if (memory > limits.max_total_memory_bytes) {
      this.issues.error(
        'services',
        'resource_constraint',
        `the services request ${formatBytes(memory)} of memory in total${totalNote}; ${where} allows ${formatBytes(limits.max_total_memory_bytes)}`,
        at,
      );
    }
  }

  /**
   * Everything accepted must fit the agent channel: the services as a job sends them (after aliases
   * and merge keys are expanded, monitoring included) stay within MAX_STACK_SPEC_BYTES.
   */
  private specSize(all: ServiceDefinition[], at: Position): void {
    const sizes = all.map((s) => ({ name: s.name, bytes: stackSpecBytes([toServiceSpec(s)]) }));
    const total = sizes.reduce((sum, s) => sum + s.bytes, 0);
    if (total <= MAX_STACK_SPEC_BYTES) return;
    const largest = sizes.reduce((a, b) => (b.bytes > a.bytes ? b : a));
    this.issues.error(
      'services',
      'resource_constraint',
      `the services take ${total} bytes as a job sends them to an agent (the largest, ${largest.name}, ${largest.bytes}); a stack may take at most ${MAX_STACK_SPEC_BYTES}: make environment values or commands smaller, or split the stack`,
      at,
    );
  }

  /** Kahn's algorithm, always taking the alphabetically first ready service: stable output. */
  private dependencyOrder(services: ServiceDefinition[]): ServiceDefinition[] | null {
    const byName = new Map(services.map((s) => [s.name, s]));
    const waiting = new Map<string, number>();
    const dependents = new Map<string, string[]>();
    for (const s of services) {
      const deps = s.depends_on.filter((d) => byName.has(d));
      waiting.set(s.name, deps.length);
      for (const d of deps) {
        const list = dependents.get(d);
        if (list) list.push(s.name);
        else dependents.set(d, [s.name]);
      }
    }
    const ready = new NameHeap();
    for (const s of services) if (waiting.get(s.name) === 0) ready.push(s.name);
    const out: ServiceDefinition[] = [];
    for (let name = ready.pop(); name !== undefined; name = ready.pop()) {
      out.push(byName.get(name) as ServiceDefinition);
      for (const next of dependents.get(name) ?? []) {
        const left = (waiting.get(next) ?? 0) - 1;
        waiting.set(next, left);
        if (left === 0) ready.push(next);
      }
    }
    return out.length === services.length ? out : null;
  }
}

/** A binary min-heap of names, so ordering stays O(n log n) for large stacks. */
class NameHeap {
  private readonly items: string[] = [];

  push(name: string): void {
    const a = this.items;
    a.push(name);
    for (let i = a.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (a[parent] <= a[i]) break;
      [a[parent], a[i]] = [a[i], a[parent]];
      i = parent;
    }
  }

  pop(): string | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < a.length && a[l] < a[min]) min = l;
        if (r < a.length && a[r] < a[min]) min = r;
        if (min === i) break;
        [a[min], a[i]] = [a[i], a[min]];
        i = min;
      }
    }
    return top;
  }
}

/** Parses and validates a stack definition file against the (bundled by default) catalogue. */
export function validateDefinition(source: string, catalog: Catalog = getCatalog()): ValidationResult {
  let root: YamlNode | null;
  try {
    root = parseYamlTree(source);
  } catch (err) {
    if (err instanceof YamlTreeError) {
      return { kind: 'yaml_error', error: { message: err.message, line: err.line, column: err.column } };
    }
    throw err;
  }
  return new DefinitionValidator(catalog).run(root);
}
