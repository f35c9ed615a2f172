// What the resource commands share: the paths, and the printing and polling helpers.
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from '../api.js';
import type { DefinitionReading } from '../args.js';
import type { DefinitionFile } from '../definition-file.js';
import { CliError } from '../errors.js';
import { clean, printJson, table } from '../output.js';

import { type Drift, isJob, isLogPage, isObject, type Job, type LogLine } from './views.js';

export const CLIENTS = 'api/v1/auth/clients';
export const KEYS = 'api/v1/auth/keys';
export const JOIN_TOKENS = 'api/v1/orchestrator/join-tokens';
export const WORKERS = 'api/v1/orchestrator/workers';
export const STACKS = 'api/v1/orchestrator/stacks';
export const JOBS = 'api/v1/orchestrator/jobs';
export const VALIDATE = 'api/v1/orchestrator/unifier/validate';
export const TUNNEL = 'api/v1/tunnel';
export const DEBUG_BUNDLE = 'api/v1/orchestrator/debug/bundle';

/** How often --wait and --follow ask the service again. */
export const POLL_INTERVAL_MS = 500;
/** Log lines asked for per request (the service allows up to 5,000). */
export const LOG_PAGE_LINES = 1000;
export const TERMINAL_JOB_STATES: readonly string[] = ['succeeded', 'failed', 'cancelled'];

export const stackPath = (id: string) => `${STACKS}/${encodeURIComponent(id)}`;
export const jobPath = (id: string) => `${JOBS}/${encodeURIComponent(id)}`;

export const yamlPayload = (file: DefinitionFile) => ({ contentType: 'application/yaml', data: file.data });

/**
 * A definition command's request: the file as YAML with the reading in the query, or, when there
 * are variables, the JSON body `{definition, variables}` (docs/compose.md, "Sending one").
 */
export function definitionCall(file: DefinitionFile, reading: DefinitionReading) {
  if (reading.variables === undefined) return { raw: yamlPayload(file), query: reading.query };
  const body = { definition: Buffer.from(file.data).toString('utf8'), variables: reading.variables };
  return {
    raw: { contentType: 'application/json', data: Buffer.from(JSON.stringify(body)) },
    query: reading.query,
  };
}

export const followHint = (jobId: string) =>
  `Follow it with "stackctl jobs logs ${clean(jobId)} --follow" or "stackctl jobs get ${clean(jobId)}".`;

/**
 * --wait: polls the job until it has ended and prints it; exit 1 (a CliError) unless it succeeded.
 * Text output reports each change of status on stderr while waiting.
 */
export async function finishJob(api: ApiClient, started: Job, json: boolean): Promise<void> {
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
export async function printLogs(
  api: ApiClient,
  jobId: string,
  follow: boolean,
  json: boolean,
): Promise<void> {
  const lines: LogLine[] = [];
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
export function printFields(fields: [string, string][]): void {
  const width = Math.max(...fields.map(([name]) => name.length)) + 1;
  for (const [name, value] of fields) console.log(`${`${name}:`.padEnd(width)} ${clean(value)}`);
}

export function printJob(job: Job): void {
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

export function printDrift(drift: Drift): void {
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

export const orDash = (value: string | number | null): string => (value === null ? '-' : String(value));

/**
 * Every page of a list (its items under `key`), following `next_cursor` until it is null; `query`
 * is sent with each page.
 */
export async function listAll<T>(
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
export const formatLabels = (labels: Record<string, string>): string =>
  Object.keys(labels).length === 0
    ? '-'
    : Object.entries(labels)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => `${k}=${v}`)
        .join(',');

export const percent = (value: number | undefined): string => (value === undefined ? '-' : `${value}%`);

export const unexpected = (what: string) =>
  new CliError(`the service answered ${what} in a shape stackctl does not know.`);
