import { isIP } from 'node:net';
import { posix } from 'node:path';
import {
  MAX_ENV_PER_SERVICE,
  MAX_ENV_VALUE_BYTES,
  utf8Bytes,
} from '../../../contracts/agent-protocol/limits.js';
import type { Catalog } from '../catalog/catalog.js';
import { checkStack } from '../definition/cross-service.js';
import type {
  ContainerOptionsDefinition,
  HealthCheckDefinition,
  PortDefinition,
  RestartPolicy,
  ServiceDefinition,
  ServiceFileDefinition,
  StackDefinition,
  StackVolumeDefinition,
  StartCondition,
  StartConditionDefinition,
  VolumeMountDefinition,
} from '../definition/definition.types.js';
import { dependencyOrder } from '../definition/dependency-order.js';
import type { Issues } from '../definition/issues.js';
import { chooseKit, variantLabel, type KitChoice } from '../definition/kit-fields.js';
import { asText, describe, isNull } from '../definition/node-readers.js';
import type { PortUse } from '../definition/port-fields.js';
import { formatBytes, formatCpu, parseCpu } from '../definition/quantities.js';
import {
  DNS_LABEL,
  DNS_LABEL_RULE,
  readImage,
  type DependencyUse,
  type ParsedService,
} from '../definition/service-fields.js';
import type { Position, YamlMap, YamlNode, YamlScalar } from '../definition/yaml-tree.js';
import {
  DEPLOY_KEYS,
  FILE_OBJECT_KEYS,
  NETWORK_KEYS,
  SERVICE_KEYS,
  TOP_LEVEL_KEYS,
  VOLUME_KEYS,
  type KeyClass,
} from './compose-keys.js';
import {
  VOLUME_NAME,
  isHostPath,
  parseBytes,
  parseDuration,
  parsePortText,
  parseVolumeText,
  splitCommand,
} from './compose-values.js';

/**
 * A Compose file (after interpolation and the schema check) as our normalized definition: every
 * key is honoured, refused or reported as without effect (compose-keys.ts), the services run with
 * the docker driver on the stack network, and the stack-wide rules are ours (cross-service.ts).
 * Messages name keys, services and variables, never a value from the file.
 */

export interface ComposeOptions {
  /** `?name=`: wins over the file's `name`. */
  name?: string;
  stackkit?: string;
  variant?: string;
  /** Selected profiles (`?profiles=`). */
  profiles: readonly string[];
  /** The request's variables: pass-through `environment` entries and `environment:` configs read them. */
  variables: Readonly<Record<string, string>>;
  /** The kit when neither the request nor `x-stackkit` names one (DEFAULT_STACKKIT). */
  defaultStackkit: string;
}

const RESERVED_LABEL = 'io.stack-orchestrator.';
const COMPOSE_ENV_NAME = /^[^=\s\0]+$/;
const SIGNAL = /^(?:SIG)?[A-Z0-9+-]{1,20}$/i;
const HOSTNAME = /^[a-zA-Z0-9]([a-zA-Z0-9.-]{0,251}[a-zA-Z0-9])?$/;
/** Compose's own defaults (docs/compose.md, "Health checks"). */
const HEALTH_DEFAULTS = { interval: 30_000, timeout: 30_000, retries: 3, startInterval: 5_000 };
const MIN_INTERVAL_MS = 1000;
const MAX_INTERVAL_MS = 3_600_000;

interface Context {
  issues: Issues;
  kit: KitChoice;
  options: ComposeOptions;
  stack: string | undefined;
  volumes: Map<string, { used: boolean; pos: Position; def: StackVolumeDefinition }>;
  networks: Set<string>;
  configs: Map<string, FileObject>;
  secrets: Map<string, FileObject>;
  /** Services the selected profiles leave out, with their profiles (for references to them). */
  inactive: Map<string, string[]>;
  /** Aliases `links` give other services (target -> aliases). */
  linkAliases: Map<string, Set<string>>;
}

interface FileObject {
  content: string | null;
}

const join = (path: string, key: string | number): string => (path ? `${path}.${key}` : String(key));

/** The normalized definition of a Compose file, or null when a part could not be read (reported). */
export function translateCompose(
  top: YamlMap,
  options: ComposeOptions,
  catalog: Catalog,
  issues: Issues,
): StackDefinition | null {
  classify(top, TOP_LEVEL_KEYS, '', issues, (key) => key === 'x-stackkit' || key === 'x-variant');
  const stack = stackName(top, options, issues);
  const kit = kitOf(top, options, catalog, issues);
  const ctx: Context = {
    issues,
    kit,
    options,
    stack,
    volumes: readTopVolumes(top, issues),
    networks: readTopNetworks(top, issues),
    configs: readFileObjects(top, 'configs', options, issues),
    secrets: readFileObjects(top, 'secrets', options, issues),
    inactive: new Map(),
    linkAliases: new Map(),
  };

  const servicesNode = top.entries.get('services')?.value;
  if (servicesNode === undefined || servicesNode.kind !== 'map' || servicesNode.entries.size === 0) {
    issues.error(
      'services',
      'missing_required_field',
      'a Compose file needs at least one service under services',
      servicesNode?.pos ?? top.pos,
    );
    return null;
  }
  const selected = new Set(options.profiles);
  const active: [string, YamlMap, Position][] = [];
  for (const [name, entry] of servicesNode.entries) {
    if (entry.value.kind !== 'map') {
      issues.error(`services.${name}`, 'invalid_value', `service ${name} must be a mapping`, entry.value.pos);
      continue;
    }
    const profiles = stringList(entry.value.entries.get('profiles')?.value);
    if (profiles.length > 0 && !profiles.some((p) => selected.has(p))) {
      ctx.inactive.set(name, profiles);
      issues.warn(
        `services.${name}`,
        `service ${name} is not part of this stack: its profiles (${profiles.join(', ')}) are not selected (?profiles=)`,
        entry.key.pos,
      );
      continue;
    }
    active.push([name, entry.value, entry.key.pos]);
  }
  if (active.length === 0) {
    issues.error(
      'services',
      'invalid_value',
      'no service is left once profiles are applied: select a profile with ?profiles=',
      servicesNode.pos,
    );
    return null;
  }
  const names = new Set(active.map(([name]) => name));
  const parsed: ParsedService[] = [];
  for (const [name, map, keyPos] of active) {
    const service = readService(name, map, keyPos, names, ctx);
    if (service !== null) parsed.push(service);
  }
  for (const p of parsed) {
    const extra = ctx.linkAliases.get(p.def.name);
    if (extra === undefined) continue;
    const container = (p.def.container ??= {});
    container.aliases = [...new Set([...(container.aliases ?? []), ...extra])];
  }
  for (const [name, volume] of ctx.volumes) {
    if (!volume.used) {
      issues.warn(
        `volumes.${name}`,
        `volume ${name} is declared but no service mounts it: it is not created`,
        volume.pos,
      );
    }
  }
  const all = checkStack(parsed, [], kit, servicesNode.pos, issues);
  if (stack === undefined) return null;
  const ordered = dependencyOrder(all);
  if (ordered === null) return null;
  return {
    name: stack,
    stackkit: kit.kitName,
    variant: kit.variantName,
    services: ordered,
    monitoring: { enabled: false, metrics_store: null, dashboard: null, log_store: null },
    volumes: [...ctx.volumes.values()].filter((v) => v.used).map((v) => v.def),
    format: 'compose',
  };
}

/** Reports each key by its class; `extra` keys (ours) pass. */
function classify(
  map: YamlMap,
  table: Record<string, KeyClass>,
  path: string,
  issues: Issues,
  extra: (key: string) => boolean = () => false,
): void {
  for (const [key, entry] of map.entries) {
    if (key.startsWith('x-') && !extra(key)) continue;
    if (extra(key)) continue;
    const kind = table[key] as KeyClass | undefined;
    const at = entry.key.pos;
    if (kind === undefined) {
      issues.error(join(path, key), 'invalid_value', `${key} is not a key this orchestrator knows here`, at);
    } else if (kind.class === 'refused') {
      if (!isNull(entry.value))
        issues.error(join(path, key), 'invalid_value', `${key} is refused: ${kind.why}`, at);
    } else if (kind.class === 'no_effect') {
      issues.warn(join(path, key), `${key} has no effect here: ${kind.why}`, at);
    }
  }
}

function stackName(top: YamlMap, options: ComposeOptions, issues: Issues): string | undefined {
  const node = top.entries.get('name')?.value;
  let name = options.name;
  let at: Position | null = null;
  if (name === undefined && node !== undefined && node.kind === 'scalar' && typeof node.value === 'string') {
    name = node.value;
    at = node.pos;
  }
  if (name === undefined || name === '') {
    issues.error(
      'name',
      'missing_required_field',
      'the stack needs a name: give ?name= or a top-level name in the Compose file',
      node?.pos ?? top.pos,
    );
    return undefined;
  }
  if (!DNS_LABEL.test(name)) {
    issues.error('name', 'invalid_value', `the stack name must be ${DNS_LABEL_RULE}`, at);
    return undefined;
  }
  return name;
}

function kitOf(top: YamlMap, options: ComposeOptions, catalog: Catalog, issues: Issues): KitChoice {
  const fromFile = (key: string): { value: string; pos: Position } | undefined => {
    const node = top.entries.get(key)?.value;
    if (node === undefined || node.kind !== 'scalar' || typeof node.value !== 'string') return undefined;
    return { value: node.value, pos: node.pos };
  };
  const kit =
    options.stackkit !== undefined ? { value: options.stackkit, pos: null } : fromFile('x-stackkit');
  const variant =
    options.variant !== undefined ? { value: options.variant, pos: null } : fromFile('x-variant');
  return chooseKit(
    kit ?? { value: options.defaultStackkit, pos: null },
    variant ?? { value: 'default', pos: null },
    {
      kit: options.stackkit !== undefined || kit === undefined ? 'stackkit' : 'x-stackkit',
      variant: 'x-variant',
    },
    catalog,
    issues,
  );
}

function readTopVolumes(
  top: YamlMap,
  issues: Issues,
): Map<string, { used: boolean; pos: Position; def: StackVolumeDefinition }> {
  const volumes = new Map<string, { used: boolean; pos: Position; def: StackVolumeDefinition }>();
  const node = top.entries.get('volumes')?.value;
  if (node === undefined || node.kind !== 'map') return volumes;
  for (const [name, entry] of node.entries) {
    const path = `volumes.${name}`;
    if (!VOLUME_NAME.test(name) || name.length > 64) {
      issues.error(
        path,
        'invalid_value',
        'a volume name is 1-64 of letters, digits, "_", "." and "-", starting with a letter or digit',
        entry.key.pos,
      );
      continue;
    }
    const labels: Record<string, string> = {};
    if (entry.value.kind === 'map') {
      classify(entry.value, VOLUME_KEYS, path, issues);
      const driver = entry.value.entries.get('driver')?.value;
      if (driver !== undefined && !isNull(driver) && asText(driver) !== 'local') {
        issues.error(
          `${path}.driver`,
          'invalid_value',
          "volumes use the engine's local driver only",
          driver.pos,
        );
      }
      Object.assign(labels, readLabels(entry.value.entries.get('labels')?.value, `${path}.labels`, issues));
    }
    volumes.set(name, { used: false, pos: entry.key.pos, def: { name, labels } });
  }
  return volumes;
}

function readTopNetworks(top: YamlMap, issues: Issues): Set<string> {
  const networks = new Set<string>(['default']);
  const node = top.entries.get('networks')?.value;
  if (node === undefined || node.kind !== 'map') return networks;
  for (const [name, entry] of node.entries) {
    const path = `networks.${name}`;
    networks.add(name);
    if (entry.value.kind === 'map') {
      classify(entry.value, NETWORK_KEYS, path, issues);
      const driver = entry.value.entries.get('driver')?.value;
      if (driver !== undefined && !isNull(driver) && asText(driver) !== 'bridge') {
        issues.error(
          `${path}.driver`,
          'invalid_value',
          'the stack network is a bridge network: other drivers are refused',
          driver.pos,
        );
      }
    }
  }
  const own = [...networks].filter((n) => n !== 'default');
  if (own.length > 1) {
    issues.warn(
      'networks',
      `the networks ${own.join(', ')} are one network here: every service of the stack reaches every other (Compose would keep them apart)`,
      node.pos,
    );
  }
  return networks;
}

function readFileObjects(
  top: YamlMap,
  key: 'configs' | 'secrets',
  options: ComposeOptions,
  issues: Issues,
): Map<string, FileObject> {
  const objects = new Map<string, FileObject>();
  const node = top.entries.get(key)?.value;
  if (node === undefined || node.kind !== 'map') return objects;
  for (const [name, entry] of node.entries) {
    const path = `${key}.${name}`;
    if (entry.value.kind !== 'map') {
      issues.error(
        path,
        'invalid_value',
        `${key} entries are mappings with content or environment`,
        entry.value.pos,
      );
      continue;
    }
    classify(entry.value, FILE_OBJECT_KEYS, path, issues);
    const content = entry.value.entries.get('content')?.value;
    const environment = entry.value.entries.get('environment')?.value;
    if (content !== undefined) {
      const text = asText(content);
      if (text === undefined) {
        issues.error(`${path}.content`, 'invalid_value', "content is the file's text", content.pos);
        continue;
      }
      objects.set(name, { content: text });
    } else if (environment !== undefined) {
      const variable = asText(environment);
      const value = variable === undefined ? undefined : options.variables[variable];
      if (variable === undefined || value === undefined) {
        issues.error(
          `${path}.environment`,
          'missing_required_field',
          `the variable ${variable ?? ''} is not among the stack's variables: send it under variables`,
          environment.pos,
        );
        continue;
      }
      objects.set(name, { content: value });
    } else if (!entry.value.entries.has('file') && !entry.value.entries.has('external')) {
      issues.error(
        path,
        'missing_required_field',
        `${key} ${name} needs content or environment`,
        entry.value.pos,
      );
    } else objects.set(name, { content: null });
  }
  return objects;
}

function readService(
  name: string,
  map: YamlMap,
  keyPos: Position,
  active: ReadonlySet<string>,
  ctx: Context,
): ParsedService | null {
  const { issues, kit } = ctx;
  const path = `services.${name}`;
  if (!DNS_LABEL.test(name)) {
    issues.error(
      path,
      'invalid_service_name',
      `service name "${name.slice(0, 63)}" is not valid here: it must be ${DNS_LABEL_RULE} (services reach each other by these names)`,
      keyPos,
    );
  }
  classify(map, SERVICE_KEYS, path, issues);
  const get = (key: string): YamlNode | undefined => {
    const node = map.entries.get(key)?.value;
    return node === undefined || isNull(node) ? undefined : node;
  };
  const at = (key: string): string => `${path}.${key}`;

  const imageNode = get('image');
  const image = readImage(imageNode, at('image'), issues);
  if (imageNode === undefined && get('build') === undefined) {
    issues.error(at('image'), 'missing_required_field', `service ${name} needs an image`, map.pos);
  }
  const container: ContainerOptionsDefinition = {};
  const command = readWords(get('command'), at('command'), 'command', issues) ?? [];
  const entrypoint = readWords(get('entrypoint'), at('entrypoint'), 'entrypoint', issues);
  if (entrypoint !== undefined) container.entrypoint = entrypoint;

  const env = readEnvironment(get('environment'), at('environment'), ctx);
  const ports = readPorts(get('ports'), at('ports'), name, issues);
  const expose = readExpose(get('expose'), at('expose'), issues);
  if (expose.length > 0) container.expose = expose;
  const volumes = [
    ...readVolumes(get('volumes'), at('volumes'), ctx),
    ...readTmpfs(get('tmpfs'), at('tmpfs'), issues),
  ];
  duplicateTargets(volumes, at('volumes'), map.entries.get('volumes')?.value.pos ?? map.pos, issues);
  const files = [
    ...readFileRefs(get('configs'), at('configs'), 'configs', ctx),
    ...readFileRefs(get('secrets'), at('secrets'), 'secrets', ctx),
  ];
  const health = readHealthcheck(get('healthcheck'), at('healthcheck'), issues);
  const dependencies = readDependsOn(get('depends_on'), at('depends_on'), name, active, ctx);
  readLinks(get('links'), at('links'), name, active, ctx, dependencies.uses);
  const restart = readRestart(get('restart'), get('deploy'), path, container, issues);
  const resources = readResources(map, path, kit, container, issues);
  readContainerOptions(map, path, container, ctx);
  readPullPolicy(get('pull_policy'), at('pull_policy'), issues);

  for (const [key, value] of Object.entries(env)) {
    if (/^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value)) {
      issues.error(
        `${at('environment')}.${key}`,
        'invalid_value',
        'after interpolation this value is a whole ${NAME}, which the agent would take for a reference to its own environment; give the value through variables instead',
        map.entries.get('environment')?.value.pos ?? map.pos,
      );
    }
  }

  const def: ServiceDefinition = {
    name,
    image: image ?? '',
    command,
    env,
    ports: ports.map((p) => p.port),
    resources,
    health_check: health,
    metrics: null,
    public: null,
    depends_on: [...new Set(dependencies.uses.map((d) => d.name))],
    placement: { labels: {} },
    restart,
    driver: 'docker',
    origin: 'definition',
    ...(files.length > 0 ? { files } : {}),
    ...(volumes.length > 0 ? { volumes } : {}),
    ...(Object.keys(dependencies.conditions).length > 0 ? { start_conditions: dependencies.conditions } : {}),
    ...(Object.keys(container).length > 0 ? { container } : {}),
  };
  return { def, ports: ports.filter((p) => p.port.host !== 0), dependencies: dependencies.uses };
}

// ---- command, environment ----

function readWords(
  node: YamlNode | undefined,
  path: string,
  what: string,
  issues: Issues,
): string[] | undefined {
  if (node === undefined) return undefined;
  if (node.kind === 'scalar') {
    const text = asText(node);
    if (text === undefined) return undefined;
    const words = splitCommand(text);
    if (typeof words === 'string') {
      issues.error(path, 'invalid_value', `${what} cannot be split into words: ${words}`, node.pos);
      return undefined;
    }
    return words;
  }
  if (node.kind !== 'seq') {
    issues.error(path, 'invalid_value', `${what} is a string or a list of arguments`, node.pos);
    return undefined;
  }
  const words: string[] = [];
  node.items.forEach((item, i) => {
    const text = asText(item);
    if (text === undefined) issues.error(`${path}.${i}`, 'invalid_value', 'arguments are strings', item.pos);
    else words.push(text);
  });
  return words;
}

function readEnvironment(node: YamlNode | undefined, path: string, ctx: Context): Record<string, string> {
  const env: Record<string, string> = {};
  if (node === undefined) return env;
  const { issues } = ctx;
  const set = (key: string, value: string | undefined, at: Position, keyPath: string) => {
    if (!COMPOSE_ENV_NAME.test(key)) {
      issues.error(keyPath, 'invalid_value', 'an environment variable name has no "=", blank or NUL', at);
      return;
    }
    if (Object.keys(env).length >= MAX_ENV_PER_SERVICE) {
      issues.error(
        keyPath,
        'resource_constraint',
        `a service may have at most ${MAX_ENV_PER_SERVICE} environment variables`,
        at,
      );
      return;
    }
    if (value === undefined) {
      // `- KEY` / `KEY:` takes the value from the stack's variables, as Compose takes it from the shell.
      const passed = ctx.options.variables[key];
      if (passed === undefined) {
        issues.warn(
          keyPath,
          `the variable ${key} is not among the stack's variables: the container does not get it`,
          at,
        );
        return;
      }
      value = passed;
    }
    if (utf8Bytes(value) > MAX_ENV_VALUE_BYTES) {
      issues.error(
        keyPath,
        'resource_constraint',
        `an environment value may take at most ${MAX_ENV_VALUE_BYTES} bytes`,
        at,
      );
      return;
    }
    env[key] = value;
  };
  if (node.kind === 'seq') {
    node.items.forEach((item, i) => {
      const text = asText(item);
      if (text === undefined) {
        issues.error(`${path}.${i}`, 'invalid_value', 'environment items are KEY=value or KEY', item.pos);
        return;
      }
      const eq = text.indexOf('=');
      if (eq < 0) set(text, undefined, item.pos, `${path}.${i}`);
      else set(text.slice(0, eq), text.slice(eq + 1), item.pos, `${path}.${i}`);
    });
  } else if (node.kind === 'map') {
    for (const [key, entry] of node.entries) {
      if (entry.value.kind !== 'scalar') {
        issues.error(
          `${path}.${key}`,
          'invalid_value',
          `an environment value is a string or a number, not ${describe(entry.value)}`,
          entry.value.pos,
        );
        continue;
      }
      set(key, entry.value.value === null ? undefined : asText(entry.value), entry.key.pos, `${path}.${key}`);
    }
  } else {
    issues.error(path, 'invalid_value', 'environment is a list of KEY=value or a mapping', node.pos);
  }
  return env;
}

// ---- ports ----

function readPorts(node: YamlNode | undefined, path: string, service: string, issues: Issues): PortUse[] {
  if (node === undefined) return [];
  if (node.kind !== 'seq') {
    issues.error(path, 'invalid_value', 'ports is a list', node.pos);
    return [];
  }
  const uses: PortUse[] = [];
  node.items.forEach((item, i) => {
    const itemPath = `${path}.${i}`;
    const add = (port: PortDefinition) => uses.push({ service, port, at: item.pos, path: itemPath });
    if (item.kind === 'map') {
      readLongPort(item, itemPath, issues)?.forEach(add);
      return;
    }
    const text = asText(item);
    const parsed = text === undefined ? 'a port is a number, text or a mapping' : parsePortText(text);
    if (typeof parsed === 'string') {
      issues.error(itemPath, 'invalid_value', parsed, item.pos);
      return;
    }
    if (!checkPortParts(parsed.protocol, parsed.address, itemPath, item.pos, issues)) return;
    parsed.containers.forEach((container, k) =>
      add({
        container,
        host: parsed.hosts[k] ?? 0,
        protocol: parsed.protocol as 'tcp' | 'udp',
        ...(parsed.address !== undefined && parsed.address !== '0.0.0.0' ? { address: parsed.address } : {}),
      }),
    );
  });
  return uses;
}

function checkPortParts(
  protocol: string,
  address: string | undefined,
  path: string,
  at: Position,
  issues: Issues,
): boolean {
  if (protocol !== 'tcp' && protocol !== 'udp') {
    issues.error(path, 'invalid_value', 'the protocol of a port is tcp or udp', at);
    return false;
  }
  if (address !== undefined && isIP(address) === 0) {
    issues.error(path, 'invalid_value', 'the address of a port is an IPv4 or IPv6 address of the node', at);
    return false;
  }
  return true;
}

function readLongPort(map: YamlMap, path: string, issues: Issues): PortDefinition[] | undefined {
  const target = map.entries.get('target')?.value;
  const published = map.entries.get('published')?.value;
  const hostIp = map.entries.get('host_ip')?.value;
  const protocolNode = map.entries.get('protocol')?.value;
  for (const [key, entry] of map.entries) {
    if (key === 'mode' && asText(entry.value) === 'ingress') {
      issues.warn(
        `${path}.mode`,
        "mode has no effect here: ports are published on the service's worker (host mode)",
        entry.key.pos,
      );
    } else if (key === 'name' || key === 'app_protocol') {
      issues.warn(`${path}.${key}`, `${key} has no effect here: it only names the port`, entry.key.pos);
    }
  }
  const containerText = target === undefined ? undefined : asText(target);
  if (containerText === undefined) {
    issues.error(
      `${path}.target`,
      'missing_required_field',
      'a port needs target (the container port)',
      map.pos,
    );
    return undefined;
  }
  const protocol = protocolNode === undefined || isNull(protocolNode) ? 'tcp' : (asText(protocolNode) ?? '');
  const address = hostIp === undefined || isNull(hostIp) ? undefined : asText(hostIp);
  const text = `${published !== undefined && !isNull(published) ? `${asText(published) ?? ''}:` : ''}${containerText}`;
  const parsed = parsePortText(text);
  if (typeof parsed === 'string') {
    issues.error(path, 'invalid_value', parsed, map.pos);
    return undefined;
  }
  if (!checkPortParts(protocol, address, path, map.pos, issues)) return undefined;
  return parsed.containers.map((container, k) => ({
    container,
    host: parsed.hosts[k] ?? 0,
    protocol: protocol as 'tcp' | 'udp',
    ...(address !== undefined && address !== '0.0.0.0' ? { address } : {}),
  }));
}

function readExpose(node: YamlNode | undefined, path: string, issues: Issues): number[] {
  if (node === undefined) return [];
  if (node.kind !== 'seq') {
    issues.error(path, 'invalid_value', 'expose is a list of container ports', node.pos);
    return [];
  }
  const ports: number[] = [];
  node.items.forEach((item, i) => {
    const text = asText(item)?.replace(/\/(tcp|udp)$/, '');
    const parsed = text === undefined ? undefined : parsePortText(text);
    if (parsed === undefined || typeof parsed === 'string' || parsed.hosts.length > 0) {
      issues.error(
        `${path}.${i}`,
        'invalid_value',
        'expose items are container ports such as 3000 or "8000-8010"',
        item.pos,
      );
    } else ports.push(...parsed.containers);
  });
  return [...new Set(ports)];
}

// ---- volumes and files ----

function readVolumes(node: YamlNode | undefined, path: string, ctx: Context): VolumeMountDefinition[] {
  const { issues } = ctx;
  if (node === undefined) return [];
  if (node.kind !== 'seq') {
    issues.error(path, 'invalid_value', 'volumes is a list', node.pos);
    return [];
  }
  const mounts: VolumeMountDefinition[] = [];
  node.items.forEach((item, i) => {
    const itemPath = `${path}.${i}`;
    const mount =
      item.kind === 'map' ? readLongVolume(item, itemPath, ctx) : readShortVolume(item, itemPath, ctx);
    if (mount !== undefined) mounts.push(mount);
  });
  return mounts;
}

function readShortVolume(item: YamlNode, path: string, ctx: Context): VolumeMountDefinition | undefined {
  const { issues } = ctx;
  const text = asText(item);
  const parsed = text === undefined ? 'a volume is text or a mapping' : parseVolumeText(text);
  if (typeof parsed === 'string') {
    issues.error(path, 'invalid_value', parsed, item.pos);
    return undefined;
  }
  for (const option of parsed.options) {
    issues.warn(path, `the volume option ${option} has no effect here (only ro and rw do)`, item.pos);
  }
  return mountOf(
    parsed.source === '' ? 'volume' : isHostPath(parsed.source) ? 'bind' : 'volume',
    parsed.source,
    parsed.target,
    parsed.readOnly,
    0,
    path,
    item.pos,
    ctx,
  );
}

function readLongVolume(map: YamlMap, path: string, ctx: Context): VolumeMountDefinition | undefined {
  const { issues } = ctx;
  const text = (key: string): string | undefined => {
    const node = map.entries.get(key)?.value;
    return node === undefined || isNull(node) ? undefined : asText(node);
  };
  const type = text('type') ?? 'volume';
  if (type !== 'volume' && type !== 'bind' && type !== 'tmpfs') {
    issues.error(
      `${path}.type`,
      'invalid_value',
      `volume type ${type} is refused: volume, bind and tmpfs are supported`,
      map.pos,
    );
    return undefined;
  }
  const target = text('target');
  if (target === undefined) {
    issues.error(
      `${path}.target`,
      'missing_required_field',
      'a volume needs target (the path in the container)',
      map.pos,
    );
    return undefined;
  }
  const readOnlyNode = map.entries.get('read_only')?.value;
  const readOnly = readOnlyNode?.kind === 'scalar' && readOnlyNode.value === true;
  let size = 0;
  for (const [key, entry] of map.entries) {
    const keyPath = `${path}.${key}`;
    if (['type', 'source', 'target', 'read_only'].includes(key) || key.startsWith('x-')) continue;
    if (key === 'tmpfs' && entry.value.kind === 'map') {
      const sizeNode = entry.value.entries.get('size')?.value;
      if (sizeNode !== undefined) {
        const bytes = parseBytes(sizeNode.kind === 'scalar' ? sizeNode.value : undefined);
        if (typeof bytes === 'string') issues.error(`${keyPath}.size`, 'invalid_value', bytes, sizeNode.pos);
        else size = bytes;
      }
      if (entry.value.entries.has('mode'))
        issues.warn(
          `${keyPath}.mode`,
          "tmpfs mode has no effect here: the engine's default (1777) applies",
          entry.key.pos,
        );
    } else if (key === 'volume' && entry.value.kind === 'map' && entry.value.entries.has('subpath')) {
      issues.error(
        `${keyPath}.subpath`,
        'invalid_value',
        'volume.subpath is refused: the whole volume would be mounted, and the data written to another place; mount the volume and point the service at the subdirectory',
        entry.key.pos,
      );
    } else {
      issues.warn(keyPath, `${key} has no effect here`, entry.key.pos);
    }
  }
  return mountOf(type, text('source') ?? '', target, readOnly, size, path, map.pos, ctx);
}

function mountOf(
  type: VolumeMountDefinition['type'],
  source: string,
  target: string,
  readOnly: boolean,
  size: number,
  path: string,
  at: Position,
  ctx: Context,
): VolumeMountDefinition | undefined {
  const { issues } = ctx;
  if (!target.startsWith('/')) {
    issues.error(path, 'invalid_value', 'a mount target is an absolute path in the container', at);
    return undefined;
  }
  const normalizedTarget = posix.normalize(target);
  if (type === 'bind') {
    if (!source.startsWith('/')) {
      issues.error(
        path,
        'invalid_value',
        'a bind of a relative or home path needs the project directory, which a plain Compose file does not bring (project bundles: a later release); use a named volume, or a config with content for a file',
        at,
      );
      return undefined;
    }
    issues.warn(
      path,
      'a bind of a host path runs only on a worker whose agent allows that directory (stack-agent --allow-host-path); elsewhere the deploy fails naming it',
      at,
    );
    return { type, source: posix.normalize(source), target: normalizedTarget, read_only: readOnly };
  }
  if (type === 'tmpfs')
    return {
      type,
      source: '',
      target: normalizedTarget,
      read_only: readOnly,
      ...(size > 0 ? { size_bytes: size } : {}),
    };
  if (source !== '') {
    const volume = ctx.volumes.get(source);
    if (volume === undefined) {
      issues.error(
        path,
        'invalid_value',
        `volume ${source.slice(0, 64)} is not declared under the top-level volumes`,
        at,
      );
      return undefined;
    }
    volume.used = true;
  }
  return { type, source, target: normalizedTarget, read_only: readOnly };
}

function readTmpfs(node: YamlNode | undefined, path: string, issues: Issues): VolumeMountDefinition[] {
  if (node === undefined) return [];
  const items = node.kind === 'seq' ? node.items : [node];
  const mounts: VolumeMountDefinition[] = [];
  items.forEach((item, i) => {
    const itemPath = node.kind === 'seq' ? `${path}.${i}` : path;
    const text = asText(item);
    if (text === undefined || !text.startsWith('/')) {
      issues.error(
        itemPath,
        'invalid_value',
        'tmpfs items are absolute paths, optionally with :size=…',
        item.pos,
      );
      return;
    }
    const [target, options = ''] = text.split(':', 2);
    let size = 0;
    for (const option of options.split(',').filter(Boolean)) {
      if (option.startsWith('size=')) {
        const bytes = parseBytes(option.slice(5));
        if (typeof bytes === 'string') issues.error(itemPath, 'invalid_value', bytes, item.pos);
        else size = bytes;
      } else issues.warn(itemPath, `the tmpfs option ${option.split('=')[0]} has no effect here`, item.pos);
    }
    mounts.push({
      type: 'tmpfs',
      source: '',
      target: posix.normalize(target),
      read_only: false,
      ...(size > 0 ? { size_bytes: size } : {}),
    });
  });
  return mounts;
}

function duplicateTargets(mounts: VolumeMountDefinition[], path: string, at: Position, issues: Issues): void {
  const seen = new Set<string>();
  for (const m of mounts) {
    if (seen.has(m.target)) issues.error(path, 'invalid_value', `two mounts have the target ${m.target}`, at);
    seen.add(m.target);
  }
}

function readFileRefs(
  node: YamlNode | undefined,
  path: string,
  kind: 'configs' | 'secrets',
  ctx: Context,
): ServiceFileDefinition[] {
  const { issues } = ctx;
  if (node === undefined) return [];
  if (node.kind !== 'seq') {
    issues.error(path, 'invalid_value', `${kind} is a list`, node.pos);
    return [];
  }
  const objects = kind === 'configs' ? ctx.configs : ctx.secrets;
  const files: ServiceFileDefinition[] = [];
  node.items.forEach((item, i) => {
    const itemPath = `${path}.${i}`;
    let source: string | undefined;
    let target: string | undefined;
    let mode = 0o444;
    if (item.kind === 'map') {
      for (const [key, entry] of item.entries) {
        if (key === 'source') source = asText(entry.value);
        else if (key === 'target') target = asText(entry.value);
        else if (key === 'mode') {
          const parsed = fileMode(entry.value);
          if (parsed === undefined)
            issues.error(
              `${itemPath}.mode`,
              'invalid_value',
              'mode is a permission number such as 0440',
              entry.value.pos,
            );
          else mode = parsed;
        } else if (key === 'uid' || key === 'gid') {
          issues.warn(
            `${itemPath}.${key}`,
            `${key} has no effect here: the file belongs to root; mode applies`,
            entry.key.pos,
          );
        } else if (!key.startsWith('x-')) {
          issues.error(
            `${itemPath}.${key}`,
            'invalid_value',
            `${key} is not a key of a ${kind} entry`,
            entry.key.pos,
          );
        }
      }
    } else source = asText(item);
    if (source === undefined) {
      issues.error(
        itemPath,
        'missing_required_field',
        `a ${kind} entry names one of the top-level ${kind}`,
        item.pos,
      );
      return;
    }
    const object = objects.get(source);
    if (object === undefined) {
      issues.error(
        itemPath,
        'invalid_value',
        `${source.slice(0, 64)} is not declared under the top-level ${kind}`,
        item.pos,
      );
      return;
    }
    if (object.content === null) return; // refused at its declaration
    const base = kind === 'secrets' ? '/run/secrets' : '/';
    const file = posix.resolve(base, target ?? source);
    files.push({ path: file, content: object.content, mode, credential: null });
  });
  return files;
}

/** `0440` is octal as Compose (YAML 1.1) reads it; YAML 1.2 would read it as 440. */
function fileMode(node: YamlNode): number | undefined {
  if (node.kind !== 'scalar') return undefined;
  const text = node.text.trim();
  const mode = /^0o?[0-7]+$/.test(text)
    ? parseInt(text.replace(/^0o?/, '') || '0', 8)
    : typeof node.value === 'number'
      ? node.value
      : NaN;
  return Number.isInteger(mode) && mode >= 0 && mode <= 0o7777 ? mode : undefined;
}

// ---- health, dependencies, restart ----

function readHealthcheck(
  node: YamlNode | undefined,
  path: string,
  issues: Issues,
): HealthCheckDefinition | null {
  if (node === undefined) return null;
  if (node.kind !== 'map') {
    issues.error(path, 'invalid_value', 'healthcheck is a mapping', node.pos);
    return null;
  }
  const disable = node.entries.get('disable')?.value;
  if (disable?.kind === 'scalar' && disable.value === true) return null;
  const testNode = node.entries.get('test')?.value;
  let test: string[] | undefined;
  if (testNode === undefined || isNull(testNode)) {
    issues.error(
      `${path}.test`,
      'missing_required_field',
      "healthcheck needs test (the image's own HEALTHCHECK is not run by this orchestrator)",
      node.pos,
    );
    return null;
  } else if (testNode.kind === 'scalar') {
    const text = asText(testNode) ?? '';
    test = ['/bin/sh', '-c', text];
  } else if (testNode.kind === 'seq') {
    const words = testNode.items.map((item) => asText(item));
    if (words.some((w) => w === undefined) || words.length === 0) {
      issues.error(`${path}.test`, 'invalid_value', 'test is a list of strings', testNode.pos);
      return null;
    }
    const [form, ...rest] = words as string[];
    if (form === 'NONE') return null;
    if (form === 'CMD' && rest.length > 0) test = rest;
    else if (form === 'CMD-SHELL' && rest.length === 1) test = ['/bin/sh', '-c', rest[0]];
    else {
      issues.error(
        `${path}.test`,
        'invalid_value',
        'test starts with CMD (then the arguments), CMD-SHELL (then one command line) or NONE',
        testNode.pos,
      );
      return null;
    }
  } else {
    issues.error(`${path}.test`, 'invalid_value', 'test is a string or a list', testNode.pos);
    return null;
  }
  const duration = (key: string, fallback: number, min: number): number => {
    const value = node.entries.get(key)?.value;
    if (value === undefined || isNull(value)) return fallback;
    const ms = parseDuration(value.kind === 'scalar' ? value.value : undefined);
    if (typeof ms === 'string') {
      issues.error(`${path}.${key}`, 'invalid_value', ms, value.pos);
      return fallback;
    }
    if (ms < min || ms > MAX_INTERVAL_MS) {
      issues.error(`${path}.${key}`, 'invalid_value', `${key} is from ${min / 1000}s to 1h here`, value.pos);
      return fallback;
    }
    return ms;
  };
  const retriesNode = node.entries.get('retries')?.value;
  let retries = HEALTH_DEFAULTS.retries;
  if (retriesNode !== undefined && !isNull(retriesNode)) {
    const value = retriesNode.kind === 'scalar' ? retriesNode.value : undefined;
    if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 1000) retries = value;
    else
      issues.error(
        `${path}.retries`,
        'invalid_value',
        'retries is a whole number from 1 to 1000',
        retriesNode.pos,
      );
  }
  return {
    type: 'command',
    path: '/',
    port: 0,
    interval_ms: duration('interval', HEALTH_DEFAULTS.interval, MIN_INTERVAL_MS),
    test,
    timeout_ms: duration('timeout', HEALTH_DEFAULTS.timeout, MIN_INTERVAL_MS),
    retries,
    start_period_ms: duration('start_period', 0, 0),
    start_interval_ms: duration('start_interval', HEALTH_DEFAULTS.startInterval, MIN_INTERVAL_MS),
  };
}

const CONDITIONS: readonly StartCondition[] = [
  'service_started',
  'service_healthy',
  'service_completed_successfully',
];

function readDependsOn(
  node: YamlNode | undefined,
  path: string,
  self: string,
  active: ReadonlySet<string>,
  ctx: Context,
): { uses: DependencyUse[]; conditions: Record<string, StartConditionDefinition> } {
  const { issues } = ctx;
  const uses: DependencyUse[] = [];
  const conditions: Record<string, StartConditionDefinition> = {};
  if (node === undefined) return { uses, conditions };
  const add = (name: string, at: Position, usePath: string, condition?: StartConditionDefinition) => {
    const profiles = ctx.inactive.get(name);
    if (profiles !== undefined && !active.has(name)) {
      if (condition?.required === false) return;
      issues.error(
        usePath,
        'invalid_value',
        `service ${self} depends on ${name}, whose profiles (${profiles.join(', ')}) are not selected`,
        at,
      );
      return;
    }
    uses.push({ name, at, path: usePath });
    if (
      condition !== undefined &&
      (condition.condition !== 'service_started' || !condition.required || condition.restart)
    ) {
      conditions[name] = condition;
    }
  };
  if (node.kind === 'seq') {
    node.items.forEach((item, i) => {
      const name = asText(item);
      if (name === undefined)
        issues.error(`${path}.${i}`, 'invalid_value', 'depends_on items are service names', item.pos);
      else add(name, item.pos, `${path}.${i}`);
    });
  } else if (node.kind === 'map') {
    for (const [name, entry] of node.entries) {
      const entryPath = `${path}.${name}`;
      const spec = entry.value;
      let condition: StartCondition = 'service_started';
      let required = true;
      let restart = false;
      if (spec.kind === 'map') {
        for (const [key, field] of spec.entries) {
          const text = asText(field.value);
          if (key === 'condition') {
            if (text !== undefined && (CONDITIONS as readonly string[]).includes(text))
              condition = text as StartCondition;
            else
              issues.error(
                `${entryPath}.condition`,
                'invalid_value',
                `condition is one of ${CONDITIONS.join(', ')}`,
                field.value.pos,
              );
          } else if (key === 'required' || key === 'restart') {
            const value = field.value.kind === 'scalar' ? field.value.value : undefined;
            if (typeof value !== 'boolean')
              issues.error(
                `${entryPath}.${key}`,
                'invalid_value',
                `${key} is true or false`,
                field.value.pos,
              );
            else if (key === 'required') required = value;
            else restart = value;
          } else if (!key.startsWith('x-')) {
            issues.error(
              `${entryPath}.${key}`,
              'invalid_value',
              `${key} is not a key of a depends_on entry`,
              field.key.pos,
            );
          }
        }
      } else if (!isNull(spec)) {
        issues.error(
          entryPath,
          'invalid_value',
          'a depends_on entry is a mapping with condition, required and restart',
          spec.pos,
        );
      }
      add(name, entry.key.pos, entryPath, { condition, required, restart });
    }
  } else issues.error(path, 'invalid_value', 'depends_on is a list of service names or a mapping', node.pos);
  return { uses, conditions };
}

function readLinks(
  node: YamlNode | undefined,
  path: string,
  self: string,
  active: ReadonlySet<string>,
  ctx: Context,
  uses: DependencyUse[],
): void {
  if (node === undefined) return;
  if (node.kind !== 'seq') {
    ctx.issues.error(path, 'invalid_value', 'links is a list of SERVICE or SERVICE:ALIAS', node.pos);
    return;
  }
  node.items.forEach((item, i) => {
    const text = asText(item) ?? '';
    const [target, alias] = text.split(':', 2);
    if (!active.has(target)) {
      ctx.issues.error(
        `${path}.${i}`,
        'invalid_value',
        `service ${self} links to ${target.slice(0, 63)}, which is not a service of this stack`,
        item.pos,
      );
      return;
    }
    // A link also orders the start, as in Compose.
    if (!uses.some((u) => u.name === target)) uses.push({ name: target, at: item.pos, path: `${path}.${i}` });
    if (alias !== undefined && alias !== target) {
      const set = ctx.linkAliases.get(target) ?? new Set<string>();
      set.add(alias);
      ctx.linkAliases.set(target, set);
    }
  });
}

function readRestart(
  node: YamlNode | undefined,
  deploy: YamlNode | undefined,
  path: string,
  container: ContainerOptionsDefinition,
  issues: Issues,
): RestartPolicy {
  if (node !== undefined) {
    const text = node.kind === 'scalar' ? (node.value === false ? 'no' : asText(node)) : undefined;
    const match = text === undefined ? null : /^(no|always|unless-stopped|on-failure)(?::(\d+))?$/.exec(text);
    if (match === null || (match[2] !== undefined && match[1] !== 'on-failure')) {
      issues.error(
        `${path}.restart`,
        'invalid_value',
        'restart is "no", always, on-failure, on-failure:N or unless-stopped',
        node.pos,
      );
      return 'never';
    }
    if (match[2] !== undefined && Number(match[2]) > 0) container.restart_max_retries = Number(match[2]);
    return match[1] === 'no' ? 'never' : match[1] === 'on-failure' ? 'on-failure' : 'always';
  }
  const policy = deploy?.kind === 'map' ? deploy.entries.get('restart_policy')?.value : undefined;
  if (policy?.kind === 'map') {
    const condition = asText(
      policy.entries.get('condition')?.value ?? {
        kind: 'scalar',
        value: 'any',
        text: 'any',
        pos: policy.pos,
        size: 1,
        height: 0,
      },
    );
    const attempts = policy.entries.get('max_attempts')?.value;
    if (attempts?.kind === 'scalar' && typeof attempts.value === 'number' && attempts.value > 0) {
      container.restart_max_retries = attempts.value;
    }
    for (const [key, entry] of policy.entries) {
      if (key === 'delay' || key === 'window')
        issues.warn(
          `${path}.deploy.restart_policy.${key}`,
          `${key} has no effect here: the engine restarts at once`,
          entry.key.pos,
        );
    }
    if (condition === 'none') return 'never';
    if (condition === 'on-failure') return 'on-failure';
    if (condition === 'any') return 'always';
    issues.error(
      `${path}.deploy.restart_policy.condition`,
      'invalid_value',
      'condition is none, on-failure or any',
      policy.pos,
    );
  }
  // Compose's default: a container that stops stays stopped.
  return 'never';
}

// ---- resources ----

function readResources(
  map: YamlMap,
  path: string,
  kit: KitChoice,
  container: ContainerOptionsDefinition,
  issues: Issues,
): ServiceDefinition['resources'] {
  const deploy = map.entries.get('deploy')?.value;
  let limitCpu: number | undefined;
  let limitMemory: number | undefined;
  let reserveCpu: number | undefined;
  let reserveMemory: number | undefined;
  const cpuOf = (node: YamlNode | undefined, at: string): number | undefined => {
    if (node === undefined || isNull(node)) return undefined;
    const value = node.kind === 'scalar' ? node.value : undefined;
    const cores = parseCpu(typeof value === 'string' && /^\d*\.?\d+$/.test(value) ? Number(value) : value);
    if (cores === undefined)
      issues.error(at, 'invalid_value', 'cpus is a number of cores such as 0.5 or "2"', node.pos);
    return cores;
  };
  const bytesOf = (node: YamlNode | undefined, at: string): number | undefined => {
    if (node === undefined || isNull(node)) return undefined;
    const bytes = parseBytes(node.kind === 'scalar' ? node.value : undefined);
    if (typeof bytes === 'string') {
      issues.error(at, 'invalid_value', bytes, node.pos);
      return undefined;
    }
    return bytes;
  };
  if (deploy?.kind === 'map') {
    classify(deploy, DEPLOY_KEYS, `${path}.deploy`, issues);
    const replicas = deploy.entries.get('replicas')?.value;
    if (replicas?.kind === 'scalar' && typeof replicas.value === 'number' && replicas.value !== 1) {
      issues.error(
        `${path}.deploy.replicas`,
        'invalid_value',
        'one container per service: replicas other than 1 are refused',
        replicas.pos,
      );
    }
    const mode = deploy.entries.get('mode')?.value;
    if (mode !== undefined && !isNull(mode) && asText(mode) !== 'replicated') {
      issues.error(
        `${path}.deploy.mode`,
        'invalid_value',
        'mode global is refused: a stack runs on one worker',
        mode.pos,
      );
    }
    const resources = deploy.entries.get('resources')?.value;
    if (resources?.kind === 'map') {
      const rPath = `${path}.deploy.resources`;
      for (const [key, entry] of resources.entries) {
        if (key !== 'limits' && key !== 'reservations') {
          issues.error(
            `${rPath}.${key}`,
            'invalid_value',
            `${key} is not a key of deploy.resources`,
            entry.key.pos,
          );
          continue;
        }
        if (entry.value.kind !== 'map') continue;
        for (const [field, value] of entry.value.entries) {
          const at = `${rPath}.${key}.${field}`;
          if (field === 'cpus') {
            if (key === 'limits') limitCpu = cpuOf(value.value, at);
            else reserveCpu = cpuOf(value.value, at);
          } else if (field === 'memory') {
            if (key === 'limits') limitMemory = bytesOf(value.value, at);
            else reserveMemory = bytesOf(value.value, at);
          } else if (field === 'devices' || field === 'generic_resources') {
            issues.error(
              at,
              'invalid_value',
              `${field} is refused: devices are not scheduled by this orchestrator`,
              value.key.pos,
            );
          } else {
            issues.warn(at, `${field} has no effect here`, value.key.pos);
          }
        }
      }
    }
  }
  limitCpu ??= cpuOf(map.entries.get('cpus')?.value, `${path}.cpus`);
  limitMemory ??= bytesOf(map.entries.get('mem_limit')?.value, `${path}.mem_limit`);
  reserveMemory ??= bytesOf(map.entries.get('mem_reservation')?.value, `${path}.mem_reservation`);

  const defaults = kit.variant?.default_resources ?? { cpu: 0, memory_bytes: 0 };
  const cpu = reserveCpu ?? limitCpu ?? defaults.cpu;
  const memory = reserveMemory ?? limitMemory ?? defaults.memory_bytes;
  const limits = kit.variant?.limits;
  if (limits !== undefined) {
    const where = variantLabel(kit);
    const cpuTop = Math.max(cpu, limitCpu ?? 0);
    if (cpuTop > limits.max_cpu_per_service) {
      issues.error(
        `${path}.deploy.resources`,
        'resource_constraint',
        `service asks for ${formatCpu(cpuTop)}; ${where} allows ${formatCpu(limits.max_cpu_per_service)} per service`,
        map.pos,
      );
    }
    const memoryTop = Math.max(memory, limitMemory ?? 0);
    if (memoryTop > limits.max_memory_per_service_bytes) {
      issues.error(
        `${path}.deploy.resources`,
        'resource_constraint',
        `service asks for ${formatBytes(memoryTop)} of memory; ${where} allows ${formatBytes(limits.max_memory_per_service_bytes)} per service`,
        map.pos,
      );
    }
  }
  if (limitCpu !== undefined) container.cpu_limit = limitCpu;
  if (limitMemory !== undefined) container.memory_limit_bytes = limitMemory;
  if (reserveMemory !== undefined) container.memory_reservation_bytes = reserveMemory;
  return { cpu, memory_bytes: memory, capped: false };
}

// ---- container options ----

function readContainerOptions(
  map: YamlMap,
  path: string,
  container: ContainerOptionsDefinition,
  ctx: Context,
): void {
  const { issues } = ctx;
  const node = (key: string): YamlNode | undefined => {
    const value = map.entries.get(key)?.value;
    return value === undefined || isNull(value) ? undefined : value;
  };
  const text = (key: string): string | undefined => {
    const value = node(key);
    if (value === undefined) return undefined;
    const t = asText(value);
    if (t === undefined) issues.error(`${path}.${key}`, 'invalid_value', `${key} is a string`, value.pos);
    return t;
  };
  const bool = (key: string): boolean | undefined => {
    const value = node(key);
    if (value === undefined) return undefined;
    if (value.kind === 'scalar' && typeof value.value === 'boolean') return value.value;
    issues.error(`${path}.${key}`, 'invalid_value', `${key} is true or false`, value.pos);
    return undefined;
  };
  const user = text('user');
  if (user !== undefined) container.user = user;
  const workingDir = text('working_dir');
  if (workingDir !== undefined) {
    if (workingDir.startsWith('/')) container.working_dir = workingDir;
    else
      issues.error(
        `${path}.working_dir`,
        'invalid_value',
        'working_dir is an absolute path',
        node('working_dir')?.pos ?? null,
      );
  }
  const hostname = text('hostname');
  if (hostname !== undefined) {
    if (HOSTNAME.test(hostname)) container.hostname = hostname;
    else
      issues.error(
        `${path}.hostname`,
        'invalid_value',
        'hostname is a host name (letters, digits, "-" and ".")',
        node('hostname')?.pos ?? null,
      );
  }
  const labels = readLabels(node('labels'), `${path}.labels`, issues);
  if (Object.keys(labels).length > 0) container.labels = labels;
  const aliases = readNetworks(node('networks'), `${path}.networks`, ctx);
  if (aliases.length > 0) container.aliases = aliases;
  const hosts = readExtraHosts(node('extra_hosts'), `${path}.extra_hosts`, issues);
  if (hosts.length > 0) container.extra_hosts = hosts;
  const signal = text('stop_signal');
  if (signal !== undefined) {
    if (SIGNAL.test(signal)) container.stop_signal = signal.toUpperCase();
    else
      issues.error(
        `${path}.stop_signal`,
        'invalid_value',
        'stop_signal is a signal name such as SIGTERM or SIGQUIT',
        node('stop_signal')?.pos ?? null,
      );
  }
  const grace = node('stop_grace_period');
  if (grace !== undefined) {
    const ms = parseDuration(grace.kind === 'scalar' ? grace.value : undefined);
    if (typeof ms === 'string') issues.error(`${path}.stop_grace_period`, 'invalid_value', ms, grace.pos);
    else if (ms > 3_600_000)
      issues.error(
        `${path}.stop_grace_period`,
        'invalid_value',
        'stop_grace_period is at most 1h here',
        grace.pos,
      );
    else container.stop_grace_period_ms = ms;
  }
  const init = bool('init');
  if (init !== undefined) container.init = init;
  const readOnly = bool('read_only');
  if (readOnly !== undefined) container.read_only = readOnly;
  const shm = node('shm_size');
  if (shm !== undefined) {
    const bytes = parseBytes(shm.kind === 'scalar' ? shm.value : undefined);
    if (typeof bytes === 'string') issues.error(`${path}.shm_size`, 'invalid_value', bytes, shm.pos);
    else container.shm_size_bytes = bytes;
  }
  const ulimits = readUlimits(node('ulimits'), `${path}.ulimits`, issues);
  if (ulimits.length > 0) container.ulimits = ulimits;
}

function readLabels(node: YamlNode | undefined, path: string, issues: Issues): Record<string, string> {
  const labels: Record<string, string> = {};
  if (node === undefined || isNull(node)) return labels;
  const set = (key: string, value: string, at: Position) => {
    if (key.startsWith(RESERVED_LABEL))
      issues.error(
        `${path}.${key}`,
        'invalid_value',
        `labels starting with ${RESERVED_LABEL} are the orchestrator's own`,
        at,
      );
    else if (key === '') issues.error(path, 'invalid_value', 'a label needs a key', at);
    else labels[key] = value;
  };
  if (node.kind === 'map') {
    for (const [key, entry] of node.entries) set(key, asText(entry.value) ?? '', entry.key.pos);
  } else if (node.kind === 'seq') {
    node.items.forEach((item) => {
      const t = asText(item) ?? '';
      const eq = t.indexOf('=');
      set(eq < 0 ? t : t.slice(0, eq), eq < 0 ? '' : t.slice(eq + 1), item.pos);
    });
  } else issues.error(path, 'invalid_value', 'labels is a mapping or a list of key=value', node.pos);
  return labels;
}

function readNetworks(node: YamlNode | undefined, path: string, ctx: Context): string[] {
  const { issues } = ctx;
  const aliases: string[] = [];
  if (node === undefined) return aliases;
  const check = (name: string, at: Position, at2: string) => {
    if (!ctx.networks.has(name))
      issues.error(
        at2,
        'invalid_value',
        `network ${name.slice(0, 64)} is not declared under the top-level networks`,
        at,
      );
  };
  if (node.kind === 'seq') {
    node.items.forEach((item, i) => check(asText(item) ?? '', item.pos, `${path}.${i}`));
  } else if (node.kind === 'map') {
    for (const [name, entry] of node.entries) {
      check(name, entry.key.pos, `${path}.${name}`);
      if (entry.value.kind !== 'map') continue;
      for (const [key, field] of entry.value.entries) {
        const at = `${path}.${name}.${key}`;
        if (key === 'aliases' && field.value.kind === 'seq') {
          for (const alias of field.value.items) {
            const a = asText(alias);
            if (a !== undefined && HOSTNAME.test(a)) aliases.push(a);
            else issues.error(at, 'invalid_value', 'aliases are host names', alias.pos);
          }
        } else if (key === 'ipv4_address' || key === 'ipv6_address' || key === 'link_local_ips') {
          issues.error(
            at,
            'invalid_value',
            `${key} is refused: addresses on the stack network are assigned by the engine; reach the service by its name`,
            field.key.pos,
          );
        } else if (!key.startsWith('x-')) {
          issues.warn(at, `${key} has no effect here`, field.key.pos);
        }
      }
    }
  } else issues.error(path, 'invalid_value', 'networks is a list or a mapping', node.pos);
  return [...new Set(aliases)];
}

function readExtraHosts(node: YamlNode | undefined, path: string, issues: Issues): string[] {
  const hosts: string[] = [];
  if (node === undefined) return hosts;
  const add = (host: string, ip: string, at: Position, where: string) => {
    const address = ip.replace(/^\[(.*)\]$/, '$1');
    if (!HOSTNAME.test(host) || (address !== 'host-gateway' && isIP(address) === 0)) {
      issues.error(
        where,
        'invalid_value',
        'extra_hosts entries are host:address, the address an IP or host-gateway',
        at,
      );
    } else hosts.push(`${host}:${address}`);
  };
  if (node.kind === 'map') {
    for (const [host, entry] of node.entries)
      add(host, asText(entry.value) ?? '', entry.key.pos, `${path}.${host}`);
  } else if (node.kind === 'seq') {
    node.items.forEach((item, i) => {
      const t = asText(item) ?? '';
      const sep = t.search(/[=:]/);
      add(sep < 0 ? t : t.slice(0, sep), sep < 0 ? '' : t.slice(sep + 1), item.pos, `${path}.${i}`);
    });
  } else issues.error(path, 'invalid_value', 'extra_hosts is a list or a mapping', node.pos);
  return hosts;
}

function readUlimits(
  node: YamlNode | undefined,
  path: string,
  issues: Issues,
): { name: string; soft: number; hard: number }[] {
  const ulimits: { name: string; soft: number; hard: number }[] = [];
  if (node === undefined) return ulimits;
  if (node.kind !== 'map') {
    issues.error(path, 'invalid_value', 'ulimits is a mapping of name to a number or {soft, hard}', node.pos);
    return ulimits;
  }
  const int = (n: YamlNode | undefined): number | undefined =>
    n?.kind === 'scalar' && typeof n.value === 'number' && Number.isSafeInteger(n.value) && n.value >= -1
      ? n.value
      : undefined;
  for (const [name, entry] of node.entries) {
    const at = `${path}.${name}`;
    if (!/^[a-z]+$/.test(name)) {
      issues.error(
        at,
        'invalid_value',
        'a ulimit name is lower-case letters (nofile, nproc, memlock…)',
        entry.key.pos,
      );
      continue;
    }
    const value = entry.value;
    const single = int(value);
    const soft = single ?? (value.kind === 'map' ? int(value.entries.get('soft')?.value) : undefined);
    const hard = single ?? (value.kind === 'map' ? int(value.entries.get('hard')?.value) : undefined);
    if (soft === undefined || hard === undefined || (hard >= 0 && soft > hard)) {
      issues.error(
        at,
        'invalid_value',
        'a ulimit is a number or {soft, hard} with soft at most hard',
        value.pos,
      );
      continue;
    }
    ulimits.push({ name, soft, hard });
  }
  return ulimits;
}

function readPullPolicy(node: YamlNode | undefined, path: string, issues: Issues): void {
  if (node === undefined) return;
  const text = asText(node);
  if (text === 'missing' || text === 'if_not_present') return;
  issues.warn(
    path,
    `pull_policy ${text ?? ''} has no effect here: the node pulls an image only when it lacks it`,
    node.pos,
  );
}

function stringList(node: YamlNode | undefined): string[] {
  if (node === undefined || node.kind !== 'seq') return [];
  return node.items.map((i) => asText(i)).filter((t): t is string => t !== undefined);
}

export type { YamlScalar };
