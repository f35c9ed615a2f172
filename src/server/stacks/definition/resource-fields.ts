import type { ServiceDefinition } from './definition.types.js';
import type { Issues } from './issues.js';
import { variantLabel, type KitChoice } from './kit-fields.js';
import { asMap, present, scalarValue, warnUnknownKeys } from './node-readers.js';
import { formatBytes, formatCpu, parseCpu, parseMemory } from './quantities.js';
import type { YamlMap, YamlNode } from './yaml-tree.js';

/** The `resources` of a service: the variant's defaults, and at most what it allows a service. */

interface Quantity {
  key: 'cpu' | 'memory';
  parse: (value: unknown) => number | undefined;
  format: (value: number) => string;
  /** The message for text the parser refuses. */
  rule: string;
}

const CPU: Quantity = {
  key: 'cpu',
  parse: parseCpu,
  format: formatCpu,
  rule: 'cpu is a number of cores (0.5, 2) or millicores ("500m"), at least 1m',
};

const MEMORY: Quantity = {
  key: 'memory',
  parse: parseMemory,
  format: formatBytes,
  rule: 'memory is whole bytes or a size such as "256Mi", "1Gi" or "500M"',
};

export function readResources(
  node: YamlNode | undefined,
  path: string,
  kit: KitChoice,
  issues: Issues,
): ServiceDefinition['resources'] {
  const defaults = kit.variant?.default_resources ?? { cpu: 0, memory_bytes: 0 };
  if (node === undefined) return { cpu: defaults.cpu, memory_bytes: defaults.memory_bytes };
  const map = asMap(node, path, issues, 'resources');
  if (map === null) return { cpu: defaults.cpu, memory_bytes: defaults.memory_bytes };
  warnUnknownKeys(map, ['cpu', 'memory'], path, issues);
  const limits = kit.variant?.limits;
  const read = (q: Quantity, max: number | undefined): number | undefined =>
    readQuantity(map, path, q, max, kit, issues);
  return {
    cpu: read(CPU, limits?.max_cpu_per_service) ?? defaults.cpu,
    memory_bytes: read(MEMORY, limits?.max_memory_per_service_bytes) ?? defaults.memory_bytes,
  };
}

/** The value as written (reported past `max`), or undefined when absent or unreadable. */
function readQuantity(
  map: YamlMap,
  path: string,
  q: Quantity,
  max: number | undefined,
  kit: KitChoice,
  issues: Issues,
): number | undefined {
  const node = present(map, q.key);
  if (node === undefined) return undefined;
  const value = q.parse(scalarValue(node));
  if (value === undefined) {
    issues.error(`${path}.${q.key}`, 'invalid_value', q.rule, node.pos);
    return undefined;
  }
  if (max !== undefined && value > max) {
    issues.error(
      `${path}.${q.key}`,
      'resource_constraint',
      `${q.key} ${q.format(value)} exceeds the ${q.format(max)} a service may have in ${variantLabel(kit)}`,
      node.pos,
    );
  }
  return value;
}
