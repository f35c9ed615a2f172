import { MAX_STACK_SPEC_BYTES, stackSpecBytes } from '../../../contracts/agent-protocol/limits.js';
import { toServiceSpec } from '../service-spec.js';
import type { ServiceDefinition } from './definition.types.js';
import type { Issues } from './issues.js';
import { variantLabel, type KitChoice } from './kit-fields.js';
import { formatBytes, formatCpu } from './quantities.js';
import type { DependencyUse, ParsedService } from './service-fields.js';
import type { Position } from './yaml-tree.js';

/**
 * The rules that need the whole stack: dependencies name services of the stack (never their own),
 * no two services bind one node port, no dependency cycles, and the stack fits the variant and the
 * agent channel. `parsed` are the file's services, `extra` the monitoring services it enables.
 */

const MAX_CYCLES_REPORTED = 20;

/** Runs every stack-wide rule, in the order their problems are reported. */
export function checkStack(
  parsed: ParsedService[],
  extra: ServiceDefinition[],
  kit: KitChoice,
  at: Position,
  issues: Issues,
): ServiceDefinition[] {
  const all: ServiceDefinition[] = [...parsed.map((p) => p.def), ...extra];
  const known = new Set(all.map((s) => s.name));
  dependencyReferences(parsed, known, issues);
  portConflicts(parsed, extra, issues);
  cycles(parsed, known, issues);
  stackLimits(all, parsed.length, kit, at, issues);
  specSize(all, at, issues);
  return all;
}

function dependencyReferences(parsed: ParsedService[], known: Set<string>, issues: Issues): void {
  for (const p of parsed) {
    for (const dep of p.dependencies) {
      if (dep.name === p.def.name) {
        issues.error(dep.path, 'invalid_value', `service ${p.def.name} cannot depend on itself`, dep.at);
      } else if (!known.has(dep.name)) {
        issues.error(
          dep.path,
          'invalid_value',
          `service ${p.def.name} depends on "${dep.name.slice(0, 63)}", which is not a service of this stack`,
          dep.at,
        );
      }
    }
  }
}

/** Two services cannot bind the same node port and protocol. */
function portConflicts(parsed: ParsedService[], extra: ServiceDefinition[], issues: Issues): void {
  const taken = new Map<string, string>();
  for (const s of extra) {
    for (const p of s.ports) taken.set(`${p.host}/${p.protocol}`, `${s.name} (monitoring)`);
  }
  for (const use of parsed.flatMap((p) => p.ports)) {
    const key = `${use.port.host}/${use.port.protocol}`;
    const owner = taken.get(key);
    if (owner !== undefined) {
      issues.error(
        use.path,
        'resource_constraint',
        `host port ${key} is already used by service ${owner}`,
        use.at,
      );
    } else taken.set(key, use.service);
  }
}

/** Reports each dependency cycle at the dependency that closes it (depth-first, by name). */
function cycles(parsed: ParsedService[], known: Set<string>, issues: Issues): void {
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
        issues.error(
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

/** The variant's limits on the whole stack, monitoring services included. */
function stackLimits(
  all: ServiceDefinition[],
  own: number,
  kit: KitChoice,
  at: Position,
  issues: Issues,
): void {
  const variant = kit.variant;
  if (variant === null) return;
  const limits = variant.limits;
  const where = variantLabel(kit);
  const fromMonitoring = all.length - own;
  const countNote = fromMonitoring > 0 ? ` (${fromMonitoring} from monitoring)` : '';
  const totalNote = fromMonitoring > 0 ? ', monitoring included' : '';
  if (all.length > limits.max_services) {
    issues.error(
      'services',
      'resource_constraint',
      `the stack has ${all.length} services${countNote}; ${where} allows ${limits.max_services}`,
      at,
    );
  }
  const cpu = Math.round(all.reduce((sum, s) => sum + s.resources.cpu * 1000, 0)) / 1000;
  if (cpu > limits.max_total_cpu) {
    issues.error(
      'services',
      'resource_constraint',
      `the services request ${formatCpu(cpu)} in total${totalNote}; ${where} allows ${formatCpu(limits.max_total_cpu)}`,
      at,
    );
  }
  const memory = all.reduce((sum, s) => sum + s.resources.memory_bytes, 0);
  if (memory > limits.max_total_memory_bytes) {
    issues.error(
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
function specSize(all: ServiceDefinition[], at: Position, issues: Issues): void {
  const sizes = all.map((s) => ({ name: s.name, bytes: stackSpecBytes([toServiceSpec(s)]) }));
  const total = sizes.reduce((sum, s) => sum + s.bytes, 0);
  if (total <= MAX_STACK_SPEC_BYTES) return;
  const largest = sizes.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  issues.error(
    'services',
    'resource_constraint',
    `the services take ${total} bytes as a job sends them to an agent (the largest, ${largest.name}, ${largest.bytes}); a stack may take at most ${MAX_STACK_SPEC_BYTES}: make environment values or commands smaller, or split the stack`,
    at,
  );
}
