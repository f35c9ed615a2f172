import type { Logger } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { AgentMessage, ServerMessage } from '../../contracts/agent-protocol/index.js';

/** Keys whose values never reach a trace record: probe keys and answers, enrollment secrets. */
const SECRET_KEY = /secret|token|password|probe_key|challenge|answer|private/i;
/** An environment value that only names a variable on the node: safe to show. */
const REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/;

/** One line of what a message says, for debug records; no bodies, no values. */
export function summarize(message: AgentMessage | ServerMessage): Record<string, unknown> {
  const m = message as AgentMessage & ServerMessage;
  if (m.hello)
    return {
      kind: 'hello',
      version: m.hello.version,
      driver: m.hello.driver,
      hostname: m.hello.hostname,
      active_jobs: m.hello.active_job_ids.length,
    };
  if (m.heartbeat)
    return {
      kind: 'heartbeat',
      sequence: m.heartbeat.sequence,
      cpu_percent: m.heartbeat.metrics?.cpu_percent,
      memory_percent: m.heartbeat.metrics?.memory_percent,
      disk_percent: m.heartbeat.metrics?.disk_percent,
      failing_checks: m.heartbeat.checks.filter((c) => !c.ok).map((c) => c.name),
    };
  if (m.state) return { kind: 'state', services: m.state.services.length, stacks: m.state.stack_ids.length };
  if (m.job_event)
    return {
      kind: 'job_event',
      job_id: m.job_event.job_id,
      phase: m.job_event.phase,
      progress: m.job_event.progress,
      lines: m.job_event.lines.length,
      ...(m.job_event.error ? { error: m.job_event.error } : {}),
    };
  if (m.scrape)
    return {
      kind: 'scrape',
      stack_id: m.scrape.stack_id,
      service: m.scrape.service,
      samples: m.scrape.samples.length,
      last: m.scrape.last,
      up: m.scrape.up,
    };
  if (m.output) return { kind: 'output', lines: m.output.lines.length };
  if (m.connectivity)
    return {
      kind: 'connectivity',
      probe_id: m.connectivity.probe_id,
      results: m.connectivity.results.length,
    };
  if (m.welcome) return { kind: 'welcome', status: m.welcome.status };
  if (m.job)
    return {
      kind: 'job',
      job_id: m.job.job_id,
      job_type: m.job.type,
      stack_id: m.job.stack_id,
      revision: m.job.revision,
      services: m.job.services.length,
      attempt: m.job.attempt,
    };
  if (m.cancel_job) return { kind: 'cancel_job', job_id: m.cancel_job.job_id, cleanup: m.cancel_job.cleanup };
  if (m.probe) return { kind: 'probe', probe_id: m.probe.probe_id, targets: m.probe.targets.length };
  if (m.heartbeat_ack) return { kind: 'heartbeat_ack', sequence: m.heartbeat_ack.sequence };
  if (m.disconnect) return { kind: 'disconnect', reason: m.disconnect.reason };
  return { kind: 'unknown' };
}

/**
 * A message body for trace records: secrets replaced by "[REDACTED]", and every environment value
 * too, unless it is only a `${NAME}` reference (a definition's literal value may well be a secret).
 */
export function redactForTrace(value: unknown, key = ''): unknown {
  if (SECRET_KEY.test(key)) return value === '' ? '' : '[REDACTED]';
  if (Array.isArray(value)) return value.map((v) => redactForTrace(v));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] =
      k === 'env' && v !== null && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v as Record<string, unknown>).map(([name, text]) => [
              name,
              typeof text === 'string' && REFERENCE.test(text) ? text : '[REDACTED]',
            ]),
          )
        : redactForTrace(v, k);
  }
  return out;
}

/**
 * Debug: one record per message to or from an agent (heartbeat acks only at trace); trace adds the
 * redacted body, except for scrapes and service output: bulk data a service wrote, which may hold
 * anything (docs/stack-logs.md serves it to its owner only). Costs one level check when neither is on.
 */
export function logAgentMessage(
  logger: Logger,
  direction: 'received' | 'sent',
  workerId: string | undefined,
  message: AgentMessage | ServerMessage,
): void {
  const root = PinoLogger.root;
  if (!root.isLevelEnabled('debug')) return;
  const trace = root.isLevelEnabled('trace');
  if (!trace && (message as ServerMessage).heartbeat_ack) return;
  logger.debug(
    {
      worker_id: workerId,
      direction,
      ...summarize(message),
      ...(trace && !(message as AgentMessage).scrape && !(message as AgentMessage).output
        ? { body: redactForTrace(message) }
        : {}),
    },
    `agent message ${direction}`,
  );
}
