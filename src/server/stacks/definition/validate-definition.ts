import { getCatalog, type Catalog } from '../catalog/catalog.js';
import { expandMonitoring } from '../catalog/monitoring-expansion.js';
import { withMonitoringFiles } from '../monitoring/monitoring-files.js';
import { checkStack } from './cross-service.js';
import type {
  MonitoringDefinition,
  ServiceDefinition,
  StackDefinition,
  ValidationResult,
} from './definition.types.js';
import { dependencyOrder } from './dependency-order.js';
import { Issues, capped } from './issues.js';
import { readKitChoice, type KitChoice } from './kit-fields.js';
import { readMonitoring } from './monitoring-fields.js';
import { asMap, asString, describe, required, warnUnknownKeys } from './node-readers.js';
import { DNS_LABEL, DNS_LABEL_RULE, readService, type ParsedService } from './service-fields.js';
import { YamlTreeError, parseYamlTree, type YamlMap, type YamlNode } from './yaml-tree.js';
import { looksLikeCompose, validateCompose } from '../compose/validate-compose.js';

/**
 * Validates a stack definition file in one pass: every problem is reported with its path, category
 * and 1-based source position, and a valid file becomes the normalized {@link StackDefinition}.
 * Pure and synchronous; the safety limits of the YAML layer are in yaml-tree.ts.
 *
 * This module runs the steps in order: the top-level keys, the stack kit (kit-fields.ts), the
 * monitoring block (monitoring-fields.ts), each service (service-fields.ts and the field modules it
 * uses), the services the monitoring block adds (catalog/monitoring-expansion.ts), the stack-wide
 * rules (cross-service.ts), then the start order (dependency-order.ts). Problems are sorted by
 * position at the end (issues.ts); the order the steps report them in decides ties.
 *
 * Messages never repeat a value from the file other than names (stack, kit, variant, service and
 * key names), so a secret written in the wrong place does not travel on in an error body or a log.
 */

const TOP_KEYS = ['name', 'stackkit', 'variant', 'services', 'monitoring'];

/**
 * How a file is to be read besides its text: its format (absent: recognised, CONTRACT.md) and, for a
 * Compose file, the stack's name, kit and variant when the request gives them, the selected
 * profiles and the variables interpolation reads.
 */
export interface DefinitionOptions {
  format?: 'stack' | 'compose';
  name?: string;
  stackkit?: string;
  variant?: string;
  profiles?: readonly string[];
  variables?: Readonly<Record<string, string>>;
  /** DEFAULT_STACKKIT: a Compose file's kit when nothing names one. */
  defaultStackkit?: string;
}

/** Parses and validates a stack definition file against the (bundled by default) catalogue. */
export function validateDefinition(
  source: string,
  catalog: Catalog = getCatalog(),
  options: DefinitionOptions = {},
): ValidationResult {
  let root: YamlNode | null;
  try {
    root = parseYamlTree(source);
  } catch (err) {
    if (err instanceof YamlTreeError) {
      return { kind: 'yaml_error', error: { message: err.message, line: err.line, column: err.column } };
    }
    throw err;
  }
  const issues = new Issues();
  const format = options.format ?? (looksLikeCompose(root) ? 'compose' : 'stack');
  if (format === 'compose') {
    const definition =
      root === null
        ? (issues.error('', 'missing_required_field', 'the Compose file is empty', { line: 1, column: 1 }),
          null)
        : validateCompose(
            root,
            {
              name: options.name,
              stackkit: options.stackkit,
              variant: options.variant,
              profiles: options.profiles ?? [],
              variables: options.variables ?? {},
              defaultStackkit: options.defaultStackkit ?? 'basement-kit',
            },
            catalog,
            issues,
          );
    return result(definition, issues);
  }
  for (const key of ['name', 'stackkit', 'variant', 'profiles', 'variables'] as const) {
    const given = options[key];
    if (
      given !== undefined &&
      (!Array.isArray(given) || given.length > 0) &&
      (typeof given !== 'object' || Array.isArray(given) || Object.keys(given).length > 0)
    ) {
      issues.warn(
        '',
        `the request's ${key} applies to Compose files only: this file is a stack definition, which names its own`,
        null,
      );
    }
  }
  return result(validateTree(root, catalog, issues), issues);
}

function result(definition: StackDefinition | null, issues: Issues): ValidationResult {
  const errors = capped(issues.errors, 'errors');
  const warnings = capped(issues.warnings, 'warnings');
  if (definition === null || errors.length > 0) return { kind: 'invalid', errors, warnings };
  return { kind: 'valid', definition, warnings };
}

/** The normalized definition, or null when a part of it could not be read (reported). */
function validateTree(root: YamlNode | null, catalog: Catalog, issues: Issues): StackDefinition | null {
  const top: YamlNode = root ?? {
    kind: 'map',
    entries: new Map(),
    pos: { line: 1, column: 1 },
    size: 1,
    height: 0,
  };
  if (top.kind !== 'map') {
    issues.error(
      '',
      'invalid_value',
      `a stack definition is a mapping with name, stackkit and services, not ${describe(top)}`,
      top.pos,
    );
    return null;
  }
  warnUnknownKeys(top, TOP_KEYS, '', issues);

  const name = stackName(top, issues);
  const kit = readKitChoice(top, catalog, issues);
  const monitoring = readMonitoring(top, catalog, kit, issues);
  const services = readServices(top, name, monitoring, catalog, kit, issues);
  if (services === null || name === undefined) return null;
  const ordered = dependencyOrder(services);
  if (ordered === null) return null;
  return { name, stackkit: kit.kitName, variant: kit.variantName, services: ordered, monitoring };
}

function stackName(top: YamlMap, issues: Issues): string | undefined {
  const node = required(top, 'name', 'name', 'name is required: the stack name, a DNS label', issues);
  if (node === undefined) return undefined;
  const name = asString(node, 'name', issues, 'name');
  if (name === undefined) return undefined;
  if (!DNS_LABEL.test(name)) {
    issues.error('name', 'invalid_value', `the stack name must be ${DNS_LABEL_RULE}`, node.pos);
    return undefined;
  }
  return name;
}

/** The file's services and the monitoring services, checked together; null without any. */
function readServices(
  top: YamlMap,
  stack: string | undefined,
  monitoring: MonitoringDefinition,
  catalog: Catalog,
  kit: KitChoice,
  issues: Issues,
): ServiceDefinition[] | null {
  const node = required(
    top,
    'services',
    'services',
    'services is required: a mapping of service name to service',
    issues,
  );
  if (node === undefined) return null;
  const map = asMap(node, 'services', issues, 'services');
  if (map === null) return null;
  if (map.entries.size === 0) {
    issues.error('services', 'invalid_value', 'services must define at least one service', map.pos);
    return null;
  }

  const extra = expandMonitoring(catalog, monitoring, kit.variant?.limits.monitoring_allowed !== false);
  const reserved = new Set(extra.map((s) => s.name));
  const parsed: ParsedService[] = [];
  for (const [name, entry] of map.entries) {
    const path = `services.${name}`;
    if (!DNS_LABEL.test(name)) {
      issues.error(
        path,
        'invalid_service_name',
        `service name "${name.slice(0, 63)}" is not valid: it must be ${DNS_LABEL_RULE}`,
        entry.key.pos,
      );
    } else if (reserved.has(name)) {
      issues.error(
        path,
        'invalid_service_name',
        `service name "${name}" is taken by the monitoring stack this definition enables; rename the service`,
        entry.key.pos,
      );
    }
    const service = readService(name, stack, entry.value, path, kit, issues);
    if (service !== null) parsed.push(service);
  }
  // Without a valid name the definition is refused anyway; the files would only be noise.
  const wired =
    stack === undefined
      ? extra
      : withMonitoringFiles(
          catalog,
          stack,
          monitoring,
          extra,
          parsed.map((p) => p.def),
        );
  return checkStack(parsed, wired, kit, map.pos, issues);
}
