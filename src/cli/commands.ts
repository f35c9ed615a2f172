import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, fieldErrorLine, type ApiClient } from './api.js';
import type { Command, DefinitionFile } from './args.js';
import { CliError } from './errors.js';
import { clean, printJson, table } from './output.js';

/** The shapes of the service's answers that stackctl reads (its own copy: no server code here). */
interface ClientView {
  client_id: string;
  name: string;
  owner: string;
  scopes: string[];
  disabled: boolean;
  created_at: string;
  last_used_at: string | null;
}

interface CreatedClient extends ClientView {
  client_secret: string;
}

interface KeyView {
  kid: string;
  alg: string;
  status: string;
  created_at: string;
  publish_until: string | null;
}

interface JoinTokenView {
  id: string;
  pre_approved: boolean;
  labels: Record<string, string>;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  expired: boolean;
  uses: number;
}

interface CreatedJoinToken {
  token: string;
  id: string;
  expires_at: string;
  pre_approved: boolean;
  labels: Record<string, string>;
}

interface WorkerView {
  id: string;
  name: string;
  status: string;
  last_heartbeat: string | null;
  metrics: { cpu_percent: number; memory_percent: number; disk_percent: number } | null;
  connected: boolean;
}

interface StackView {
  id: string;
  name: string;
  status: string;
  stackkit: string;
  variant: string;
  revision: number;
  deployed_revision: number | null;
  worker_id: string | null;
  services: string[];
  created_at: string;
  updated_at: string;
}

interface ValidationIssue {
  path: string;
  category: string;
  message: string;
  line: number | null;
  column: number | null;
}

interface ValidationSummary {
  valid: true;
  stackkit: string;
  variant: string;
  services: string[];
  warnings: ValidationIssue[];
}

interface ServiceHealthView {
  name: string;
  status: string;
  uptime: string;
  health_check?: { url: string; status_code: number; latency_ms: number };
}

interface StackHealthView {
  stack_id: string;
  overall: string;
  services: ServiceHealthView[];
  worker_id: string | null;
  reported_at: string | null;
}

interface JobResult {
  name: string;
  action: string;
  ok: boolean;
  error: string | null;
}

interface JobView {
  id: string;
  type: string;
  stack_id: string;
  stack_name: string;
  revision: number;
  worker_id: string | null;
  status: string;
  progress: number;
  attempts: number;
  max_attempts: number;
  error: string | null;
  results: JobResult[] | null;
  created_at: string;
  dispatched_at: string | null;
  started_at: string | null;
  finished_at: string | null;
}

interface JobLogLine {
  time: string;
  line: string;
}

interface JobLogPage {
  job_id: string;
  lines: JobLogLine[];
  next_after: number;
  complete: boolean;
}

interface JobCleanup {
  job: JobView;
  worker_notified: boolean;
}

interface DriftItemView {
  resource: string;
  kind: string;
  worker_id: string | null;
  field: string | null;
  desired: string | null;
  actual: string | null;
  ignored: boolean;
  detected_at: string;
  last_seen: string;
}

interface DriftView {
  stack_id: string;
  status: string;
  checked_at: string | null;
  revision: number;
  items: DriftItemView[];
  ignored_resources: string[];
}

interface DriftResolve {
  job_id: string;
  job: JobView;
}

const CLIENTS = 'api/v1/auth/clients';
const KEYS = 'api/v1/auth/keys';
const JOIN_TOKENS = 'api/v1/orchestrator/join-tokens';
const WORKERS = 'api/v1/orchestrator/workers';
const STACKS = 'api/v1/orchestrator/stacks';
const JOBS = 'api/v1/orchestrator/jobs';
const VALIDATE = 'api/v1/orchestrator/unifier/validate';

/** How often --wait and --follow ask the service again. */
const POLL_INTERVAL_MS = 500;
/** Log lines asked for per request (the service allows up to 5,000). */
const LOG_PAGE_LINES = 1000;
const TERMINAL_JOB_STATES: readonly string[] = ['succeeded', 'failed', 'cancelled'];

export async function execute(api: ApiClient, command: Command, json: boolean): Promise<void> {
  switch (command.name) {
    case 'clients create': {
      const body = { name: command.clientName, scopes: command.scopes, owner: command.owner };
      const created = await api.call('POST', CLIENTS, { body });
      if (!isCreatedClient(created)) throw unexpected('the new client');
      if (json) return printJson(created);
      console.log(
        `Created client "${clean(created.name)}" (owner ${clean(created.owner)}, scopes ${clean(created.scopes.join(','))}).`,
      );
      console.log(`client_id:     ${clean(created.client_id)}`);
      console.log(`client_secret: ${clean(created.client_secret)}`);
      console.log('The client secret is shown only once: store it now. The service keeps only its hash.');
      return;
    }
    case 'clients list': {
      const query: Record<string, string> = {};
      if (command.owner !== undefined) query.owner = command.owner;
      const clients = await listAll(api, CLIENTS, 'clients', query, isClient, 'the client list');
      if (json) return printJson({ clients });
      if (clients.length === 0) {
        console.log(
          command.owner === undefined ? 'No clients.' : `No clients of owner ${clean(command.owner)}.`,
        );
        return;
      }
      console.log(
        table(
          ['CLIENT_ID', 'NAME', 'OWNER', 'SCOPES', 'DISABLED', 'CREATED_AT'],
          clients.map((c) => [
            c.client_id,
            c.name,
            c.owner,
            c.scopes.join(','),
            c.disabled ? 'yes' : 'no',
            c.created_at,
          ]),
        ),
      );
      return;
    }
    case 'clients delete':
      await api.call('DELETE', `${CLIENTS}/${encodeURIComponent(command.clientId)}`);
      if (!json) console.log(`Deleted client ${clean(command.clientId)}.`);
      return;
    case 'keys list': {
      const answer = await api.call('GET', KEYS);
      const keys = isObject(answer) ? answer.keys : undefined;
      if (!Array.isArray(keys) || !keys.every(isKey)) throw unexpected('the key list');
      if (json) return printJson(answer);
      console.log(
        table(
          ['KID', 'ALG', 'STATUS', 'CREATED_AT', 'PUBLISH_UNTIL'],
          keys.map((k) => [k.kid, k.alg, k.status, k.created_at, k.publish_until ?? '-']),
        ),
      );
      return;
    }
    case 'keys rotate': {
      const answer = await api.call('POST', `${KEYS}/rotate`);
      if (
        !isObject(answer) ||
        typeof answer.kid !== 'string' ||
        !Array.isArray(answer.retired) ||
        !answer.retired.every((k) => typeof k === 'string')
      )
        throw unexpected('the rotation');
      if (json) return printJson(answer);
      console.log(`Signing key rotated. New key: ${clean(answer.kid)}`);
      console.log(
        answer.retired.length === 0
          ? 'No key was retired.'
          : `Retired (still published until the tokens they signed expire): ${clean(answer.retired.join(', '))}`,
      );
      return;
    }
    case 'join-tokens create': {
      const body = { ttl: command.ttl, pre_approved: command.preApproved, labels: command.labels };
      const created = await api.call('POST', JOIN_TOKENS, { body });
      if (!isCreatedJoinToken(created)) throw unexpected('the new join token');
      if (json) return printJson(created);
      console.log(`Created join token ${clean(created.id)}.`);
      console.log(`token:        ${clean(created.token)}`);
      console.log(`expires_at:   ${clean(created.expires_at)}`);
      console.log(
        `pre_approved: ${created.pre_approved ? 'yes (its workers need no approval)' : 'no (approve its workers with "stackctl workers approve")'}`,
      );
      console.log(`labels:       ${clean(formatLabels(created.labels))}`);
      console.log(
        'The token is shown only once: store it now. The service keeps only its hash. Agents enroll with it until it expires or is revoked.',
      );
      return;
    }
    case 'join-tokens list': {
      const tokens = await listAll(api, JOIN_TOKENS, 'join_tokens', {}, isJoinToken, 'the join token list');
      if (json) return printJson({ join_tokens: tokens });
      if (tokens.length === 0) {
        console.log('No join tokens.');
        return;
      }
      console.log(
        table(
          ['ID', 'PRE_APPROVED', 'LABELS', 'USES', 'CREATED_AT', 'EXPIRES_AT', 'EXPIRED', 'REVOKED_AT'],
          tokens.map((j) => [
            j.id,
            j.pre_approved ? 'yes' : 'no',
            formatLabels(j.labels),
            String(j.uses),
            j.created_at,
            j.expires_at,
            j.expired ? 'yes' : 'no',
            j.revoked_at ?? '-',
          ]),
        ),
      );
      return;
    }
    case 'join-tokens revoke':
      await api.call('DELETE', `${JOIN_TOKENS}/${encodeURIComponent(command.id)}`);
      if (!json) console.log(`Revoked join token ${clean(command.id)}.`);
      return;
    case 'workers list': {
      const query: Record<string, string> = {};
      if (command.status !== undefined) query.status = command.status;
      const workers = await listAll(api, WORKERS, 'workers', query, isWorker, 'the worker list');
      if (json) return printJson({ workers });
      if (workers.length === 0) {
        console.log(
          command.status === undefined ? 'No workers.' : `No workers with status ${clean(command.status)}.`,
        );
        return;
      }
      console.log(
        table(
          ['ID', 'NAME', 'STATUS', 'CONNECTED', 'LAST_HEARTBEAT', 'CPU', 'MEM', 'DISK'],
          workers.map((w) => [
            w.id,
            w.name,
            w.status,
            w.connected ? 'yes' : 'no',
            w.last_heartbeat ?? '-',
            percent(w.metrics?.cpu_percent),
            percent(w.metrics?.memory_percent),
            percent(w.metrics?.disk_percent),
          ]),
        ),
      );
      return;
    }
    case 'workers approve': {
      const worker = await api.call('POST', `${WORKERS}/${encodeURIComponent(command.workerId)}/approve`);
      if (!isWorker(worker)) throw unexpected('the approved worker');
      if (json) return printJson(worker);
      const until = worker.last_heartbeat === null ? ' until its agent connects and sends a heartbeat' : '';
      console.log(
        `Approved worker ${clean(worker.id)} (${clean(worker.name)}); its status is ${clean(worker.status)}${until}.`,
      );
      return;
    }
    case 'workers delete':
      await api.call('DELETE', `${WORKERS}/${encodeURIComponent(command.workerId)}`);
      if (!json) console.log(`Deleted worker ${clean(command.workerId)}.`);
      return;
    case 'stacks validate': {
      let summary: unknown;
      try {
        summary = await api.call('POST', VALIDATE, { raw: yamlPayload(command.definition) });
      } catch (err) {
        // An invalid file is the answer, not a failure of the service: --json prints it too.
        if (json && isDefinitionProblem(err)) printJson(err.body);
        throw err;
      }
      if (!isValidationSummary(summary)) throw unexpected('the validation');
      if (json) return printJson(summary);
      console.log(
        `valid: stack kit ${clean(summary.stackkit)}, variant ${clean(summary.variant)}, services ${clean(summary.services.join(', '))}`,
      );
      if (summary.warnings.length > 0) {
        console.log(`${summary.warnings.length} ${summary.warnings.length === 1 ? 'warning' : 'warnings'}:`);
        for (const warning of summary.warnings) console.log(`  ${clean(fieldErrorLine({ ...warning }))}`);
      }
      return;
    }
    case 'stacks create': {
      const stack = await api.call('POST', STACKS, { raw: yamlPayload(command.definition) });
      if (!isStack(stack)) throw unexpected('the new stack');
      if (json) return printJson(stack);
      console.log(
        `Created stack "${clean(stack.name)}" (${clean(stack.id)}): revision ${stack.revision}, status ${clean(stack.status)}.`,
      );
      console.log(`Deploy it with "stackctl stacks deploy ${clean(stack.id)}".`);
      return;
    }
    case 'stacks list': {
      const stacks = await listAll(api, STACKS, 'stacks', {}, isStack, 'the stack list');
      if (json) return printJson({ stacks });
      if (stacks.length === 0) {
        console.log('No stacks.');
        return;
      }
      console.log(
        table(
          ['ID', 'NAME', 'STATUS', 'REVISION', 'DEPLOYED', 'WORKER', 'UPDATED_AT'],
          stacks.map((s) => [
            s.id,
            s.name,
            s.status,
            String(s.revision),
            orDash(s.deployed_revision),
            orDash(s.worker_id),
            s.updated_at,
          ]),
        ),
      );
      return;
    }
    case 'stacks get': {
      const stack = await api.call('GET', stackPath(command.stackId));
      if (!isStack(stack)) throw unexpected('the stack');
      if (json) return printJson(stack);
      printFields([
        ['id', stack.id],
        ['name', stack.name],
        ['status', stack.status],
        ['stackkit', stack.stackkit],
        ['variant', stack.variant],
        ['revision', String(stack.revision)],
        ['deployed_revision', orDash(stack.deployed_revision)],
        ['worker_id', orDash(stack.worker_id)],
        ['services', stack.services.length === 0 ? '-' : stack.services.join(', ')],
        ['created_at', stack.created_at],
        ['updated_at', stack.updated_at],
      ]);
      return;
    }
    case 'stacks update': {
      const stack = await api.call('PUT', stackPath(command.stackId), {
        raw: yamlPayload(command.definition),
      });
      if (!isStack(stack)) throw unexpected('the updated stack');
      if (json) return printJson(stack);
      const deployed =
        stack.deployed_revision === null ? 'never deployed' : `deployed: revision ${stack.deployed_revision}`;
      console.log(
        `Stack "${clean(stack.name)}" (${clean(stack.id)}) is now at revision ${stack.revision} (${deployed}).`,
      );
      console.log(`Deploy it with "stackctl stacks deploy ${clean(stack.id)}".`);
      return;
    }
    case 'stacks deploy': {
      const job = await api.call('POST', `${stackPath(command.stackId)}/deploy`);
      if (!isJob(job)) throw unexpected('the deploy job');
      if (command.wait) return finishJob(api, job, json);
      if (json) return printJson(job);
      console.log(
        `Deploying revision ${job.revision} of stack "${clean(job.stack_name)}": job ${clean(job.id)} is ${clean(job.status)}.`,
      );
      console.log(followHint(job.id));
      return;
    }
    case 'stacks delete': {
      const job = await api.call('DELETE', stackPath(command.stackId));
      if (!isJob(job)) throw unexpected('the destroy job');
      if (command.wait) {
        await finishJob(api, job, json);
        if (!json) console.log(`Deleted stack ${clean(job.stack_id)}.`);
        return;
      }
      if (json) return printJson(job);
      console.log(
        `Deleting stack "${clean(job.stack_name)}": job ${clean(job.id)} is ${clean(job.status)}; the stack is gone when it succeeds.`,
      );
      console.log(followHint(job.id));
      return;
    }
    case 'stacks health': {
      const health = await api.call('GET', `${stackPath(command.stackId)}/health`);
      if (!isStackHealth(health)) throw unexpected('the stack health');
      if (json) return printJson(health);
      const reported =
        health.reported_at === null
          ? 'no report from its worker'
          : `reported at ${clean(health.reported_at)}`;
      console.log(
        `Stack ${clean(health.stack_id)}: ${clean(health.overall)} (worker ${clean(health.worker_id ?? '-')}, ${reported}).`,
      );
      if (health.services.length === 0) {
        console.log('No services.');
        return;
      }
      console.log(
        table(
          ['SERVICE', 'STATUS', 'UPTIME', 'CHECK_STATUS', 'LATENCY'],
          health.services.map((s) => [
            s.name,
            s.status,
            s.uptime,
            s.health_check === undefined ? '-' : String(s.health_check.status_code),
            s.health_check === undefined ? '-' : `${s.health_check.latency_ms}ms`,
          ]),
        ),
      );
      return;
    }
    case 'jobs list': {
      const query: Record<string, string> = {};
      if (command.status !== undefined) query.status = command.status;
      if (command.stackId !== undefined) query.stack_id = command.stackId;
      if (command.type !== undefined) query.type = command.type;
      const jobs = await listAll(api, JOBS, 'jobs', query, isJob, 'the job list');
      if (json) return printJson({ jobs });
      if (jobs.length === 0) {
        console.log(Object.keys(query).length === 0 ? 'No jobs.' : 'No jobs match.');
        return;
      }
      console.log(
        table(
          ['ID', 'TYPE', 'STACK', 'REVISION', 'STATUS', 'PROGRESS', 'CREATED_AT', 'FINISHED_AT', 'ERROR'],
          jobs.map((j) => [
            j.id,
            j.type,
            j.stack_name,
            String(j.revision),
            j.status,
            `${j.progress}%`,
            j.created_at,
            orDash(j.finished_at),
            orDash(j.error),
          ]),
        ),
      );
      return;
    }
    case 'jobs get': {
      const job = await api.call('GET', jobPath(command.jobId));
      if (!isJob(job)) throw unexpected('the job');
      if (json) return printJson(job);
      printJob(job);
      return;
    }
    case 'jobs logs':
      return printLogs(api, command.jobId, command.follow, json);
    case 'jobs cancel': {
      const job = await api.call('POST', `${jobPath(command.jobId)}/cancel`);
      if (!isJob(job)) throw unexpected('the cancelled job');
      if (json) return printJson(job);
      console.log(
        job.status === 'cancelled'
          ? `Cancelled job ${clean(job.id)}.`
          : `Job ${clean(job.id)} is ${clean(job.status)}; it ends when its agent confirms.`,
      );
      return;
    }
    case 'jobs cleanup': {
      const answer = await api.call('POST', `${jobPath(command.jobId)}/cleanup`);
      if (!isJobCleanup(answer)) throw unexpected('the cleanup');
      if (json) return printJson(answer);
      const { job } = answer;
      const error = job.error === null ? '' : ` (${clean(job.error)})`;
      console.log(`Cleaned up job ${clean(job.id)}: it is ${clean(job.status)}${error}.`);
      console.log(
        answer.worker_notified
          ? 'Its worker was told to stop it and to put the stack back as the last job that succeeded left it.'
          : job.worker_id === null
            ? 'It was never placed on a worker: there is nothing to revert on a node.'
            : 'Its worker is not connected to the service: nothing was reverted on the node.',
      );
      return;
    }
    case 'drift get': {
      const drift = await api.call('GET', `${stackPath(command.stackId)}/drift`);
      if (!isDrift(drift)) throw unexpected('the drift');
      if (json) return printJson(drift);
      printDrift(drift);
      return;
    }
    case 'drift ignore':
    case 'drift unignore': {
      const action = command.name === 'drift ignore' ? 'ignore' : 'unignore';
      const drift = await api.call('POST', `${stackPath(command.stackId)}/drift/${action}`, {
        body: { resources: command.resources },
      });
      if (!isDrift(drift)) throw unexpected('the drift');
      if (json) return printJson(drift);
      printDrift(drift);
      return;
    }
    case 'drift resolve': {
      const answer = await api.call('POST', `${stackPath(command.stackId)}/drift/resolve`);
      if (!isDriftResolve(answer)) throw unexpected('the resolve job');
      if (command.wait) return finishJob(api, answer.job, json);
      if (json) return printJson(answer);
      console.log(
        `Resolving the drift of stack "${clean(answer.job.stack_name)}": job ${clean(answer.job_id)} is ${clean(answer.job.status)}.`,
      );
      console.log(followHint(answer.job_id));
      return;
    }
  }
}

const stackPath = (id: string) => `${STACKS}/${encodeURIComponent(id)}`;
const jobPath = (id: string) => `${JOBS}/${encodeURIComponent(id)}`;

const yamlPayload = (file: DefinitionFile) => ({ contentType: 'application/yaml', data: file.data });

/** The 400 invalid_yaml or 422 validation_failed answer to a definition file. */
const isDefinitionProblem = (err: unknown): err is ApiError =>
  err instanceof ApiError &&
  ((err.status === 400 && err.code === 'invalid_yaml') ||
    (err.status === 422 && err.code === 'validation_failed'));

const followHint = (jobId: string) =>
  `Follow it with "stackctl jobs logs ${clean(jobId)} --follow" or "stackctl jobs get ${clean(jobId)}".`;

/**
 * --wait: polls the job until it has ended and prints it; exit 1 (a CliError) unless it succeeded.
 * Text output reports each change of status on stderr while waiting.
 */
async function finishJob(api: ApiClient, started: JobView, json: boolean): Promise<void> {
  let job = started;
  let shown = '';
  for (;;) {
    const state = `${job.status} ${job.error ?? ''}`;
    if (!json && state !== shown) {
      const error = job.error === null ? '' : `: ${clean(job.error)}`;
      console.error(`job ${clean(job.id)} ${clean(job.status)}${error}`);
      shown = state;
    }
    if (TERMINAL_JOB_STATES.includes(job.status)) break;
    await sleep(POLL_INTERVAL_MS);
    let next: unknown;
    try {
      next = await api.call('GET', jobPath(job.id));
    } catch (err) {
      if (!(err instanceof CliError)) throw err;
      // Only the waiting ended: say how to follow the job that goes on.
      throw new CliError(err.message, err.exitCode, [
        ...err.details,
        `The job goes on; see "stackctl jobs get ${clean(job.id)}".`,
      ]);
    }
    if (!isJob(next)) throw unexpected('the job');
    job = next;
  }
  if (json) printJson(job);
  else printJob(job);
  if (job.status === 'succeeded') return;
  const error = job.error === null ? '' : `: ${job.error}`;
  throw new CliError(`job ${job.id} ${job.status}${error}.`);
}

/**
 * A job's output, page by page from line 0; with `follow` it keeps asking until the service says
 * the log is complete (the job has ended and every line was sent). --json prints one document of
 * every line at the end.
 */
async function printLogs(api: ApiClient, jobId: string, follow: boolean, json: boolean): Promise<void> {
  const lines: JobLogLine[] = [];
  let after = 0;
  let complete: boolean;
  for (;;) {
    const page = await api.call('GET', `${jobPath(jobId)}/logs`, {
      query: { after: String(after), limit: String(LOG_PAGE_LINES) },
    });
    if (!isLogPage(page)) throw unexpected('the job log');
    if (page.lines.length > 0 && page.next_after <= after)
      throw new CliError('the service sent a log page that does not move forward.');
    if (json) lines.push(...page.lines);
    else for (const l of page.lines) console.log(`${clean(l.time)} ${clean(l.line)}`);
    after = page.next_after;
    complete = page.complete;
    if (complete) break;
    // A full page: more lines are waiting now.
    if (page.lines.length >= LOG_PAGE_LINES) continue;
    if (!follow) break;
    await sleep(POLL_INTERVAL_MS);
  }
  if (json) printJson({ job_id: jobId, lines, next_after: after, complete });
}

/** `name: value` lines with the values aligned; every value cleaned. */
function printFields(fields: [string, string][]): void {
  const width = Math.max(...fields.map(([name]) => name.length)) + 1;
  for (const [name, value] of fields) console.log(`${`${name}:`.padEnd(width)} ${clean(value)}`);
}

function printJob(job: JobView): void {
  printFields([
    ['id', job.id],
    ['type', job.type],
    ['stack', `${job.stack_name} (${job.stack_id})`],
    ['revision', String(job.revision)],
    ['status', job.status],
    ['progress', `${job.progress}%`],
    ['worker_id', orDash(job.worker_id)],
    ['attempts', `${job.attempts} of ${job.max_attempts}`],
    ['error', orDash(job.error)],
    ['created_at', job.created_at],
    ['dispatched_at', orDash(job.dispatched_at)],
    ['started_at', orDash(job.started_at)],
    ['finished_at', orDash(job.finished_at)],
  ]);
  if (job.results === null || job.results.length === 0) return;
  console.log('');
  console.log(
    table(
      ['SERVICE', 'ACTION', 'OK', 'ERROR'],
      job.results.map((r) => [r.name, r.action, r.ok ? 'yes' : 'no', orDash(r.error)]),
    ),
  );
}

function printDrift(drift: DriftView): void {
  const checked = drift.checked_at === null ? 'never checked' : `checked at ${clean(drift.checked_at)}`;
  console.log(
    `Stack ${clean(drift.stack_id)}: ${clean(drift.status)} (revision ${drift.revision}, ${checked}).`,
  );
  console.log(
    `Ignored resources: ${drift.ignored_resources.length === 0 ? '-' : clean(drift.ignored_resources.join(', '))}`,
  );
  if (drift.items.length === 0) {
    console.log('No drift items.');
    return;
  }
  console.log(
    table(
      ['RESOURCE', 'KIND', 'FIELD', 'DESIRED', 'ACTUAL', 'IGNORED'],
      drift.items.map((i) => [
        i.resource,
        i.kind,
        orDash(i.field),
        orDash(i.desired),
        orDash(i.actual),
        i.ignored ? 'yes' : 'no',
      ]),
    ),
  );
}

const orDash = (value: string | number | null): string => (value === null ? '-' : String(value));

/**
 * Every page of a list (its items under `key`), following `next_cursor` until it is null; `query`
 * is sent with each page.
 */
async function listAll<T>(
  api: ApiClient,
  path: string,
  key: string,
  query: Record<string, string>,
  isItem: (value: unknown) => value is T,
  what: string,
): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  do {
    const page = await api.call('GET', path, {
      query: cursor === null ? query : { ...query, cursor },
    });
    const pageItems = isObject(page) ? page[key] : undefined;
    const next = isObject(page) ? page.next_cursor : undefined;
    if (!Array.isArray(pageItems) || !pageItems.every(isItem) || (next !== null && typeof next !== 'string'))
      throw unexpected(what);
    items.push(...pageItems);
    if (next !== null && seen.has(next)) throw new CliError('the service sent the same page cursor twice.');
    if (next !== null) seen.add(next);
    cursor = next;
  } while (cursor !== null);
  return items;
}

/** Labels as `key=value,key=value` in key order (the service's order varies), `-` for none. */
const formatLabels = (labels: Record<string, string>): string =>
  Object.keys(labels).length === 0
    ? '-'
    : Object.entries(labels)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => `${k}=${v}`)
        .join(',');

const percent = (value: number | undefined): string => (value === undefined ? '-' : `${value}%`);

const unexpected = (what: string) =>
  new CliError(`the service answered ${what} in a shape stackctl does not know.`);

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function isClient(value: unknown): value is ClientView & Record<string, unknown> {
  return (
    isObject(value) &&
    typeof value.client_id === 'string' &&
    typeof value.name === 'string' &&
    typeof value.owner === 'string' &&
    Array.isArray(value.scopes) &&
    value.scopes.every((s) => typeof s === 'string') &&
    typeof value.disabled === 'boolean' &&
    typeof value.created_at === 'string'
  );
}

const isCreatedClient = (value: unknown): value is CreatedClient =>
  isClient(value) && typeof value.client_secret === 'string';

function isKey(value: unknown): value is KeyView {
  return (
    isObject(value) &&
    typeof value.kid === 'string' &&
    typeof value.alg === 'string' &&
    typeof value.status === 'string' &&
    typeof value.created_at === 'string' &&
    (value.publish_until === null || typeof value.publish_until === 'string')
  );
}

const isLabels = (value: unknown): value is Record<string, string> =>
  isObject(value) && Object.values(value).every((v) => typeof v === 'string');

function isCreatedJoinToken(value: unknown): value is CreatedJoinToken {
  return (
    isObject(value) &&
    typeof value.token === 'string' &&
    typeof value.id === 'string' &&
    typeof value.expires_at === 'string' &&
    typeof value.pre_approved === 'boolean' &&
    isLabels(value.labels)
  );
}

function isJoinToken(value: unknown): value is JoinTokenView {
  return (
    isObject(value) &&
    typeof value.id === 'string' &&
    typeof value.pre_approved === 'boolean' &&
    isLabels(value.labels) &&
    typeof value.created_at === 'string' &&
    typeof value.expires_at === 'string' &&
    (value.revoked_at === null || typeof value.revoked_at === 'string') &&
    typeof value.expired === 'boolean' &&
    typeof value.uses === 'number'
  );
}

function isWorker(value: unknown): value is WorkerView {
  if (
    !isObject(value) ||
    typeof value.id !== 'string' ||
    typeof value.name !== 'string' ||
    typeof value.status !== 'string' ||
    (value.last_heartbeat !== null && typeof value.last_heartbeat !== 'string') ||
    typeof value.connected !== 'boolean'
  )
    return false;
  const metrics = value.metrics;
  return (
    metrics === null ||
    (isObject(metrics) &&
      typeof metrics.cpu_percent === 'number' &&
      typeof metrics.memory_percent === 'number' &&
      typeof metrics.disk_percent === 'number')
  );
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isStringOrNull = (value: unknown): value is string | null => value === null || isString(value);
const isStrings = (value: unknown): value is string[] => Array.isArray(value) && value.every(isString);
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);

function isStack(value: unknown): value is StackView {
  return (
    isObject(value) &&
    isString(value.id) &&
    isString(value.name) &&
    isString(value.status) &&
    isString(value.stackkit) &&
    isString(value.variant) &&
    isInteger(value.revision) &&
    (value.deployed_revision === null || isInteger(value.deployed_revision)) &&
    isStringOrNull(value.worker_id) &&
    isStrings(value.services) &&
    isString(value.created_at) &&
    isString(value.updated_at)
  );
}

function isValidationIssue(value: unknown): value is ValidationIssue {
  return (
    isObject(value) &&
    isString(value.path) &&
    isString(value.category) &&
    isString(value.message) &&
    (value.line === null || isInteger(value.line)) &&
    (value.column === null || isInteger(value.column))
  );
}

function isValidationSummary(value: unknown): value is ValidationSummary {
  return (
    isObject(value) &&
    value.valid === true &&
    isString(value.stackkit) &&
    isString(value.variant) &&
    isStrings(value.services) &&
    Array.isArray(value.warnings) &&
    value.warnings.every(isValidationIssue)
  );
}

function isServiceHealth(value: unknown): value is ServiceHealthView {
  if (!isObject(value) || !isString(value.name) || !isString(value.status) || !isString(value.uptime))
    return false;
  const check = value.health_check;
  return (
    check === undefined ||
    (isObject(check) &&
      isString(check.url) &&
      typeof check.status_code === 'number' &&
      typeof check.latency_ms === 'number')
  );
}

function isStackHealth(value: unknown): value is StackHealthView {
  return (
    isObject(value) &&
    isString(value.stack_id) &&
    isString(value.overall) &&
    Array.isArray(value.services) &&
    value.services.every(isServiceHealth) &&
    isStringOrNull(value.worker_id) &&
    isStringOrNull(value.reported_at)
  );
}

function isJobResult(value: unknown): value is JobResult {
  return (
    isObject(value) &&
    isString(value.name) &&
    isString(value.action) &&
    typeof value.ok === 'boolean' &&
    isStringOrNull(value.error)
  );
}

function isJob(value: unknown): value is JobView {
  return (
    isObject(value) &&
    isString(value.id) &&
    isString(value.type) &&
    isString(value.stack_id) &&
    isString(value.stack_name) &&
    isInteger(value.revision) &&
    isStringOrNull(value.worker_id) &&
    isString(value.status) &&
    typeof value.progress === 'number' &&
    isInteger(value.attempts) &&
    isInteger(value.max_attempts) &&
    isStringOrNull(value.error) &&
    (value.results === null || (Array.isArray(value.results) && value.results.every(isJobResult))) &&
    isString(value.created_at) &&
    isStringOrNull(value.dispatched_at) &&
    isStringOrNull(value.started_at) &&
    isStringOrNull(value.finished_at)
  );
}

function isLogPage(value: unknown): value is JobLogPage {
  return (
    isObject(value) &&
    isString(value.job_id) &&
    Array.isArray(value.lines) &&
    value.lines.every((l) => isObject(l) && isString(l.time) && isString(l.line)) &&
    isInteger(value.next_after) &&
    typeof value.complete === 'boolean'
  );
}

const isJobCleanup = (value: unknown): value is JobCleanup =>
  isObject(value) && isJob(value.job) && typeof value.worker_notified === 'boolean';

function isDriftItem(value: unknown): value is DriftItemView {
  return (
    isObject(value) &&
    isString(value.resource) &&
    isString(value.kind) &&
    isStringOrNull(value.worker_id) &&
    isStringOrNull(value.field) &&
    isStringOrNull(value.desired) &&
    isStringOrNull(value.actual) &&
    typeof value.ignored === 'boolean' &&
    isString(value.detected_at) &&
    isString(value.last_seen)
  );
}

function isDrift(value: unknown): value is DriftView {
  return (
    isObject(value) &&
    isString(value.stack_id) &&
    isString(value.status) &&
    isStringOrNull(value.checked_at) &&
    isInteger(value.revision) &&
    Array.isArray(value.items) &&
    value.items.every(isDriftItem) &&
    isStrings(value.ignored_resources)
  );
}

const isDriftResolve = (value: unknown): value is DriftResolve =>
  isObject(value) && isString(value.job_id) && isJob(value.job);
