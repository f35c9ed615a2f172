import { commandDigest, envDigest } from '../contracts/agent-protocol/config-digest.js';
import type { ServiceSpecMsg, ServiceStateMsg, StateReportMsg } from '../contracts/agent-protocol/index.js';

const ENV_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

export interface FittedReport {
  report: StateReportMsg;
  /** Services sent with digests instead of their command and environment. */
  trimmed: number;
  /** Stacks left out of the report altogether. */
  dropped: string[];
}

interface Entry {
  service: ServiceStateMsg;
  bytes: number;
}

/**
 * Keeps a state report within `budget` bytes as `measure` counts them (the encoded message), so a
 * node with many large stacks never sends what the service would refuse (which would end the
 * stream and leave every stack of the node unknown). First the largest services' command and
 * environment become digests, which drift still compares; a report still too big (thousands of
 * services, or huge values read back from the runtime) leaves out whole stacks, largest first,
 * together with their `stack_ids` and `last_jobs` entries, so the service shows them as unknown
 * rather than as missing.
 */
export function fitStateReport(
  report: StateReportMsg,
  budget: number,
  measure: (report: StateReportMsg) => number,
  desired: (stackId: string, service: string) => ServiceSpecMsg | undefined,
): FittedReport {
  let total = measure(report);
  if (total <= budget) return { report, trimmed: 0, dropped: [] };
  // A repeated field encodes as its items one after another, so sizes measured one by one add up
  // (to within the length prefixes, hence the exact measure after each round).
  const alone = (service: ServiceStateMsg) => measure({ services: [service], stack_ids: [], last_jobs: {} });
  const entries: Entry[] = report.services.map((service) => ({ service, bytes: alone(service) }));
  let stackIds = report.stack_ids;
  let lastJobs = report.last_jobs;
  let kept = entries;
  const assemble = (): StateReportMsg => ({
    services: kept.map((e) => e.service),
    stack_ids: stackIds,
    last_jobs: lastJobs,
  });

  const largestFirst = entries
    .filter((e) => e.service.actual && !e.service.actual.trimmed)
    .sort((a, b) => b.bytes - a.bytes);
  let trimmed = 0;
  while (total > budget && trimmed < largestFirst.length) {
    for (let estimate = total; estimate > budget && trimmed < largestFirst.length; trimmed++) {
      const entry = largestFirst[trimmed];
      const service = trimService(entry.service, desired(entry.service.stack_id, entry.service.name));
      const bytes = alone(service);
      estimate -= entry.bytes - bytes;
      Object.assign(entry, { service, bytes });
    }
    total = measure(assemble());
  }

  const dropped: string[] = [];
  for (; total > budget; total = measure(assemble())) {
    const perStack = new Map<string, number>(stackIds.map((id) => [id, 0]));
    for (const e of kept) perStack.set(e.service.stack_id, (perStack.get(e.service.stack_id) ?? 0) + e.bytes);
    if (perStack.size === 0) break;
    const [largest] = [...perStack.entries()].reduce((a, b) => (b[1] > a[1] ? b : a));
    kept = kept.filter((e) => e.service.stack_id !== largest);
    stackIds = stackIds.filter((id) => id !== largest);
    lastJobs = Object.fromEntries(Object.entries(lastJobs).filter(([id]) => id !== largest));
    dropped.push(largest);
  }
  return { report: assemble(), trimmed, dropped };
}

/**
 * The service as reported without the values the agent resolved from its own environment: a
 * variable the desired service takes from a `${NAME}` reference is reported with the reference
 * (drift compares those for presence only), so a secret such as the dashboard's admin password
 * never leaves the node, not even in the service's copy of the report.
 */
export function withReferences(state: ServiceStateMsg, want: ServiceSpecMsg | undefined): ServiceStateMsg {
  const env = state.actual?.env;
  if (!env || !want?.env) return state;
  let masked: Record<string, string> | undefined;
  for (const [name, wanted] of Object.entries(want.env)) {
    if (!ENV_REFERENCE.test(wanted) || env[name] === undefined || env[name] === wanted) continue;
    masked ??= { ...env };
    masked[name] = wanted;
  }
  return masked ? { ...state, actual: { ...state.actual!, env: masked } } : state;
}

/**
 * The service with its command and environment replaced by digests. A variable the desired
 * service takes from a `${NAME}` reference is digested with the reference as its value: its
 * resolved value (often a secret) stays on the node, and drift compares it only for presence.
 */
function trimService(state: ServiceStateMsg, want: ServiceSpecMsg | undefined): ServiceStateMsg {
  const actual = state.actual!;
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(actual.env ?? {})) {
    const wanted = want?.env?.[name];
    env[name] = wanted !== undefined && ENV_REFERENCE.test(wanted) ? wanted : value;
  }
  return {
    ...state,
    actual: {
      ...actual,
      command: [],
      env: {},
      trimmed: true,
      command_digest: commandDigest(actual.command ?? []),
      env_digest: envDigest(env),
    },
  };
}
