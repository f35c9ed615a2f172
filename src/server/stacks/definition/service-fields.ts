import { MAX_COMMAND_ARG_BYTES, utf8Bytes } from '../../../contracts/agent-protocol/limits.js';
import type { RestartPolicy, ServiceDefinition } from './definition.types.js';
import { readEnv } from './env-fields.js';
import { readHealthCheck } from './health-fields.js';
import type { Issues } from './issues.js';
import type { KitChoice } from './kit-fields.js';
import { readMetrics } from './metrics-fields.js';
import { asMap, asString, asText, present, scalarValue, warnUnknownKeys } from './node-readers.js';
import { readPorts, type PortUse } from './port-fields.js';
import { readPublic } from './public-fields.js';
import { readResources } from './resource-fields.js';
import type { Position, YamlNode } from './yaml-tree.js';

/**
 * One entry of `services`: its own fields (image, command, restart, depends_on, placement here; ports,
 * env, resources, the health check, metrics and public in their own modules), read into a {@link ServiceDefinition}.
 * What needs the other services (references, port clashes, cycles) is in cross-service.ts.
 */

/** RFC 1123 label as the contract narrows it: starts with a letter. */
export const DNS_LABEL = /^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const DNS_LABEL_RULE =
  'a DNS label: 1-63 lower-case letters, digits and "-", starting with a letter and not ending with "-"';
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
const RESTART: readonly RestartPolicy[] = ['always', 'on-failure', 'never'];
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
  'public',
  'metrics',
];

/** A `depends_on` item as written, with where, for the stack-wide checks. */
export interface DependencyUse {
  name: string;
  at: Position;
  path: string;
}

/** A service read from the file, with what the stack-wide checks need to report at its nodes. */
export interface ParsedService {
  def: ServiceDefinition;
  ports: PortUse[];
  dependencies: DependencyUse[];
}

/** `stack` is the stack's name, undefined when it is missing or wrong (reported at `name`). */
export function readService(
  name: string,
  stack: string | undefined,
  node: YamlNode,
  path: string,
  kit: KitChoice,
  issues: Issues,
): ParsedService | null {
  const map = asMap(node, path, issues, `service ${name}`);
  if (map === null) return null;
  warnUnknownKeys(map, SERVICE_KEYS, path, issues);
  const get = (key: string): YamlNode | undefined => present(map, key);

  const imageNode = get('image');
  const image = readImage(imageNode, `${path}.image`, issues);
  const commandNode = get('command');
  const command = readCommand(commandNode, `${path}.command`, issues);
  if (imageNode === undefined && commandNode === undefined) {
    issues.error(
      `${path}.image`,
      'missing_required_field',
      `service ${name} needs image (a container, docker driver) or command (a process, process driver)`,
      map.pos,
    );
  }
  const driver = imageNode !== undefined ? 'docker' : 'process';

  const ports = readPorts(get('ports'), `${path}.ports`, name, driver, issues);
  const env = readEnv(get('env'), `${path}.env`, issues);
  const resources = readResources(get('resources'), `${path}.resources`, kit, issues);
  const health_check = readHealthCheck(get('health_check'), `${path}.health_check`, ports, driver, issues);
  const metrics = readMetrics(get('metrics'), `${path}.metrics`, issues);
  const dependencies = readDependsOn(get('depends_on'), `${path}.depends_on`, issues);
  const labels = readPlacement(get('placement'), `${path}.placement`, issues);
  const restart = readRestart(get('restart'), `${path}.restart`, issues);
  const published = readPublic(get('public'), `${path}.public`, name, stack, ports, issues);

  return {
    def: {
      name,
      image,
      command,
      env,
      ports: ports.map((p) => p.port),
      resources,
      health_check,
      metrics,
      public: published,
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

export function readImage(node: YamlNode | undefined, path: string, issues: Issues): string | null {
  if (node === undefined) return null;
  const text = asString(node, path, issues, 'image');
  if (text === undefined) return null;
  if (text.length <= MAX_IMAGE && IMAGE.test(text)) return text;
  issues.error(
    path,
    'invalid_value',
    'image must be a container image reference such as nginx:1.27 or registry.example.com/team/app:2.1',
    node.pos,
  );
  return null;
}

function readCommand(node: YamlNode | undefined, path: string, issues: Issues): string[] {
  const command: string[] = [];
  if (node === undefined) return command;
  if (node.kind !== 'seq') {
    issues.error(
      path,
      'invalid_value',
      'command must be a list of arguments, run without a shell, e.g. ["/usr/bin/app", "--port", "8080"]',
      node.pos,
    );
    return command;
  }
  if (node.items.length === 0) {
    issues.error(path, 'invalid_value', 'command must not be an empty list', node.pos);
    return command;
  }
  node.items.forEach((item, i) => {
    const text = asText(item);
    if (text === undefined || (i === 0 && text.trim() === '')) {
      issues.error(
        `${path}.${i}`,
        'invalid_value',
        i === 0 ? 'the first argument (the program) must be a non-empty string' : 'arguments must be strings',
        item.pos,
      );
    } else if (utf8Bytes(text) > MAX_COMMAND_ARG_BYTES) {
      issues.error(
        `${path}.${i}`,
        'resource_constraint',
        `an argument may take at most ${MAX_COMMAND_ARG_BYTES} bytes (UTF-8); this one takes ${utf8Bytes(text)}`,
        item.pos,
      );
    } else command.push(text);
  });
  return command;
}

function readRestart(node: YamlNode | undefined, path: string, issues: Issues): RestartPolicy {
  if (node === undefined) return 'on-failure';
  const value = scalarValue(node);
  if (typeof value === 'string' && (RESTART as readonly string[]).includes(value))
    return value as RestartPolicy;
  issues.error(path, 'invalid_value', `restart must be one of ${RESTART.join(', ')}`, node.pos);
  return 'on-failure';
}

function readDependsOn(node: YamlNode | undefined, path: string, issues: Issues): DependencyUse[] {
  if (node === undefined) return [];
  if (node.kind !== 'seq') {
    issues.error(path, 'invalid_value', 'depends_on is a list of service names', node.pos);
    return [];
  }
  const uses: DependencyUse[] = [];
  node.items.forEach((item, i) => {
    if (item.kind === 'scalar' && typeof item.value === 'string') {
      uses.push({ name: item.value, at: item.pos, path: `${path}.${i}` });
    } else {
      issues.error(`${path}.${i}`, 'invalid_value', 'depends_on items are service names', item.pos);
    }
  });
  return uses;
}

function readPlacement(node: YamlNode | undefined, path: string, issues: Issues): Record<string, string> {
  const labels: Record<string, string> = {};
  if (node === undefined) return labels;
  const map = asMap(node, path, issues, 'placement');
  if (map === null) return labels;
  warnUnknownKeys(map, ['labels'], path, issues);
  const labelsNode = map.entries.get('labels')?.value;
  if (labelsNode === undefined) return labels;
  const labelMap = asMap(labelsNode, `${path}.labels`, issues, 'placement.labels');
  if (labelMap === null) return labels;
  for (const [key, entry] of labelMap.entries) {
    const keyPath = `${path}.labels.${key}`;
    if (!LABEL_KEY.test(key)) {
      issues.error(keyPath, 'invalid_value', 'label keys are 1-63 of a-z 0-9 . _ / -', entry.key.pos);
      continue;
    }
    const text = asText(entry.value);
    if (text === undefined || text.length > MAX_LABEL_VALUE) {
      issues.error(
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
