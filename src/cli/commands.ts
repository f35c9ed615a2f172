import type { ApiClient } from './api.js';
import type { Command } from './args.js';
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

const CLIENTS = 'api/v1/auth/clients';
const KEYS = 'api/v1/auth/keys';
const JOIN_TOKENS = 'api/v1/orchestrator/join-tokens';
const WORKERS = 'api/v1/orchestrator/workers';

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
  }
}

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
