import { completedOneShot } from '../stacks/stack-health.js';
import { commandDigest, envDigest } from '../../contracts/agent-protocol/config-digest.js';
import type { ServiceStateMsg } from '../../contracts/agent-protocol/index.js';
import type { DriftKind } from '../../contracts/api/drift.js';
import type { ServiceDefinition } from '../stacks/definition/definition.types.js';
import { serviceDigest } from '../stacks/service-spec.js';

/** One difference between the desired and the actual state. `field` is '' unless `modified`. */
export interface DriftFinding {
  resource: string;
  kind: DriftKind;
  field: string;
  desired: string | null;
  actual: string | null;
}

const ENV_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;
/** Values of variables with such names are never shown, whatever side they come from. */
const SENSITIVE_NAME = /pass|secret|token|key|credential/i;
const REDACTED = '[REDACTED]';

/** `nginx` and `docker.io/library/nginx:latest` are one image. */
export function normalizeImage(image: string): string {
  let name = image.trim();
  for (const prefix of ['docker.io/library/', 'docker.io/', 'index.docker.io/library/']) {
    if (name.startsWith(prefix)) {
      name = name.slice(prefix.length);
      break;
    }
  }
  const lastSlash = name.lastIndexOf('/');
  const hasTagOrDigest = name.includes('@') || name.slice(lastSlash + 1).includes(':');
  return hasTagOrDigest ? name : `${name}:latest`;
}

interface PortShape {
  container: number;
  host: number;
  protocol: string;
  address?: string;
}

const portText = (p: PortShape, address: string | undefined) =>
  `${address ? `${address}:` : ''}${p.host}:${p.container}/${p.protocol || 'tcp'}`;

/**
 * The desired and actual ports as text. A port's address counts only where the definition sets
 * one: without, the agent's own default (which may be every interface or one address) is not drift.
 */
const portsTexts = (desired: PortShape[], actual: PortShape[]): [string, string] => {
  const addressed = new Set(desired.filter((p) => p.address).map((p) => portText(p, undefined)));
  return [
    desired
      .map((p) => portText(p, p.address))
      .sort()
      .join(','),
    actual
      .map((p) => portText(p, addressed.has(portText(p, undefined)) ? p.address : undefined))
      .sort()
      .join(','),
  ];
};

const roundCpu = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Compares one stack's desired services with what its agent reported, exactly: a service is
 * `missing` when the node does not run it and nothing will restart it (absent, or stopped for good);
 * `modified` per field whose effective value differs (image, command, each env variable, ports, cpu,
 * memory; `digest` when only the configuration digest says so); `unexpected` when the node runs
 * something with the stack's markers that the definition does not have. A service the runtime is
 * restarting is not drift. Environment values the definition takes from `${NAME}` references are
 * resolved on the node and compared only for presence.
 */
export function detectDrift(desired: ServiceDefinition[], reported: ServiceStateMsg[]): DriftFinding[] {
  const findings: DriftFinding[] = [];
  const byName = new Map(reported.map((r) => [r.name, r]));
  for (const service of desired) {
    const state = byName.get(service.name);
    // A one-shot that completed (restart never, exit 0, waited for with service_completed_successfully) is as desired.
    if (completedOneShot(service, desired, state)) continue;
    if (!state || (!state.running && state.status !== 'restarting' && state.status !== 'starting')) {
      findings.push({
        resource: service.name,
        kind: 'missing',
        field: '',
        desired: 'running',
        actual: state ? state.status || 'stopped' : 'absent',
      });
      continue;
    }
    findings.push(...modifiedFields(service, state));
  }
  const wanted = new Set(desired.map((s) => s.name));
  for (const state of reported) {
    if (wanted.has(state.name)) continue;
    findings.push({
      resource: state.name,
      kind: 'unexpected',
      field: '',
      desired: null,
      actual: state.status || (state.running ? 'running' : 'stopped'),
    });
  }
  // Two containers with the same labels are one resource: one finding each.
  const unique = new Map(findings.map((f) => [key(f), f]));
  return [...unique.values()].sort((a, b) => key(a).localeCompare(key(b)));
}

function modifiedFields(service: ServiceDefinition, state: ServiceStateMsg): DriftFinding[] {
  const out: DriftFinding[] = [];
  const diff = (field: string, desired: string, actual: string) => {
    if (desired !== actual) out.push({ resource: service.name, kind: 'modified', field, desired, actual });
  };
  const actual = state.actual;
  if (actual && service.image) diff('image', normalizeImage(service.image), normalizeImage(actual.image));
  if (actual?.trimmed) {
    // The report carried digests for these (the agent's report was over its budget): a difference
    // is still found, as one item for the command and one for the whole environment.
    diff('command', commandDigest(service.command), actual.command_digest ?? '');
    diff('env', envDigest(service.env), actual.env_digest ?? '');
  } else if (actual) {
    diff('command', JSON.stringify(service.command), JSON.stringify(actual.command ?? []));
    const actualEnv = actual.env ?? {};
    const keys = new Set([...Object.keys(service.env), ...Object.keys(actualEnv)]);
    for (const name of [...keys].sort()) {
      const want = service.env[name];
      const have = actualEnv[name];
      if (want !== undefined && ENV_REFERENCE.test(want)) {
        // Resolved on the node from its own environment: only its presence can be compared.
        if (have === undefined)
          out.push({
            resource: service.name,
            kind: 'modified',
            field: `env.${name}`,
            desired: want,
            actual: null,
          });
        continue;
      }
      if (want === have) continue;
      const show = (v: string | undefined) =>
        v === undefined ? null : SENSITIVE_NAME.test(name) ? REDACTED : v;
      out.push({
        resource: service.name,
        kind: 'modified',
        field: `env.${name}`,
        desired: show(want),
        actual: show(have),
      });
    }
  }
  if (actual) {
    diff('ports', ...portsTexts(service.ports, actual.ports ?? []));
    diff('cpu', String(roundCpu(service.resources.cpu)), String(roundCpu(actual.cpu)));
    diff('memory', String(service.resources.memory_bytes), String(actual.memory_bytes));
  }
  if (out.length === 0 && state.digest && state.digest !== serviceDigest(service)) {
    out.push({
      resource: service.name,
      kind: 'modified',
      field: 'digest',
      desired: serviceDigest(service),
      actual: state.digest,
    });
  }
  return out;
}

export const key = (f: { resource: string; kind: string; field: string }): string =>
  `${f.resource}\u0000${f.kind}\u0000${f.field}`;
