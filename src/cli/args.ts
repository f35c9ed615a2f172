import { closeSync, openSync, readSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { UsageError } from './errors.js';

export const DEFAULT_SERVER = 'http://localhost:5260';

export const USAGE = `Usage: stackctl [global options] <command> [options]

Commands:
  clients create --name NAME --scopes SCOPE[,SCOPE...] [--owner OWNER]
                                Create an OAuth client; prints its secret, shown only once
  clients list [--owner OWNER]  List the clients (of OWNER; yours by default)
  clients delete CLIENT_ID      Delete a client
  keys list                     List the token signing keys
  keys rotate                   Start signing with a new key; the old ones stay published
  join-tokens create [--ttl DURATION] [--pre-approved] [--label KEY=VALUE ...]
                                Create a join token for agents to enroll with; prints it, shown
                                only once. --ttl: its lifetime, e.g. 30m or 7d (the service's
                                JOIN_TOKEN_TTL by default). The workers it enrolls get its labels,
                                and need no approval with --pre-approved
  join-tokens list              List the join tokens, revoked and expired ones included
  join-tokens revoke ID         Revoke a join token; agents cannot enroll with it any more
                                (an ID starting with "-" goes after "--": revoke -- ID)
  workers list [--status STATE] List the workers (STATE: healthy, degraded, unhealthy,
                                unreachable or pending)
  workers approve WORKER_ID     Approve a pending worker; its agent then connects
  workers delete WORKER_ID      Delete a worker and revoke its certificates
  stacks validate --file PATH   Check a stack definition file (YAML) without storing it: prints
                                "valid" and any warnings, or each error as
                                LINE:COLUMN PATH [CATEGORY] MESSAGE (exit 1)
  stacks create --file PATH     Create a stack from a definition file; it starts as a draft
  stacks list                   List the stacks
  stacks get STACK_ID           Show a stack
  stacks update STACK_ID --file PATH
                                Store a new revision of the stack's definition (the name stays);
                                "stacks deploy" applies it
  stacks deploy STACK_ID [--wait]
                                Start a job that applies the stack's current revision; with
                                --wait, wait for it to end (exit 1 unless it succeeded)
  stacks delete STACK_ID [--wait]
                                Start a job that removes the stack from its node, then the stack
  stacks health STACK_ID        The health of the stack's services on its node
  jobs list [--status STATE] [--stack STACK_ID] [--type TYPE]
                                List the jobs, newest first (STATE: queued, dispatched, running,
                                cancelling, succeeded, failed or cancelled; TYPE: provision or
                                destroy)
  jobs get JOB_ID               Show a job and its services' results
  jobs logs JOB_ID [--follow]   Print a job's output; with --follow, until the job has ended
  jobs cancel JOB_ID            Cancel a job (a running one stops when its agent confirms)
  jobs cleanup JOB_ID           End an unfinished job as failed at once and revert its node to the
                                last good state
  drift get STACK_ID            The differences between the stack's definition and its node
  drift ignore STACK_ID RESOURCE [RESOURCE...]
                                Ignore drift of these services; no deploy touches them any more
  drift unignore STACK_ID RESOURCE [RESOURCE...]
                                Stop ignoring them
  drift resolve STACK_ID [--wait]
                                Start a job that brings the node back to the definition

Global options:
  --server URL            Base URL of the service (env STACKCTL_SERVER, default ${DEFAULT_SERVER})
  --client-id ID          OAuth client id (env STACKCTL_CLIENT_ID)
  --client-secret SECRET  OAuth client secret (env STACKCTL_CLIENT_SECRET; prefer the environment:
                          other users of the machine can see command lines)
  --json                  Print the service's JSON instead of text
  -h, --help              Show this help

Options of the commands above:
  --file PATH             A stack definition file, at most 1 MiB
  --wait                  Wait for the job to end, then print it
  --follow                Keep printing new lines until the job has ended

Exit status: 0 done; 1 the service or the network failed, a definition file is not valid, or a
job waited for did not succeed; 2 the command line is wrong.
`;

/** The environment variables stackctl reads (main.ts passes them in). */
export interface CliEnv {
  STACKCTL_SERVER?: string;
  STACKCTL_CLIENT_ID?: string;
  STACKCTL_CLIENT_SECRET?: string;
}

export interface Connection {
  /** Base URL, its path ending in `/`, so API paths resolve below it. */
  server: URL;
  clientId: string;
  clientSecret: string;
}

export type Command =
  | { name: 'clients create'; clientName: string; scopes: string[]; owner: string | undefined }
  | { name: 'clients list'; owner: string | undefined }
  | { name: 'clients delete'; clientId: string }
  | { name: 'keys list' }
  | { name: 'keys rotate' }
  | {
      name: 'join-tokens create';
      ttl: string | undefined;
      preApproved: boolean | undefined;
      labels: Record<string, string> | undefined;
    }
  | { name: 'join-tokens list' }
  | { name: 'join-tokens revoke'; id: string }
  | { name: 'workers list'; status: string | undefined }
  | { name: 'workers approve'; workerId: string }
  | { name: 'workers delete'; workerId: string }
  | { name: 'stacks validate'; definition: DefinitionFile }
  | { name: 'stacks create'; definition: DefinitionFile }
  | { name: 'stacks list' }
  | { name: 'stacks get'; stackId: string }
  | { name: 'stacks update'; stackId: string; definition: DefinitionFile }
  | { name: 'stacks deploy'; stackId: string; wait: boolean }
  | { name: 'stacks delete'; stackId: string; wait: boolean }
  | { name: 'stacks health'; stackId: string }
  | {
      name: 'jobs list';
      status: string | undefined;
      stackId: string | undefined;
      type: string | undefined;
    }
  | { name: 'jobs get'; jobId: string }
  | { name: 'jobs logs'; jobId: string; follow: boolean }
  | { name: 'jobs cancel'; jobId: string }
  | { name: 'jobs cleanup'; jobId: string }
  | { name: 'drift get'; stackId: string }
  | { name: 'drift ignore'; stackId: string; resources: string[] }
  | { name: 'drift unignore'; stackId: string; resources: string[] }
  | { name: 'drift resolve'; stackId: string; wait: boolean };

/** A stack definition file as read from disk, before anything is sent. */
export interface DefinitionFile {
  path: string;
  data: Uint8Array;
}

/** The largest definition file stackctl sends: the service reads no larger request body. */
export const MAX_DEFINITION_BYTES = 1024 * 1024;

export type Invocation =
  { help: true } | { help: false; command: Command; json: boolean; connection: Connection };

const OPTIONS = {
  server: { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  scopes: { type: 'string' },
  owner: { type: 'string' },
  ttl: { type: 'string' },
  'pre-approved': { type: 'boolean' },
  label: { type: 'string', multiple: true },
  status: { type: 'string' },
  file: { type: 'string' },
  wait: { type: 'boolean' },
  follow: { type: 'boolean' },
  stack: { type: 'string' },
  type: { type: 'string' },
} as const;

const COMMAND_OPTIONS = [
  'name',
  'scopes',
  'owner',
  'ttl',
  'pre-approved',
  'label',
  'status',
  'file',
  'wait',
  'follow',
  'stack',
  'type',
] as const;
type CommandOption = (typeof COMMAND_OPTIONS)[number];

interface CommandSpec {
  options: CommandOption[];
  /** Names of the positional arguments. */
  args: string[];
  /** The last argument may be given more than once. */
  repeats?: true;
}

/** Per command: the command options it accepts and the names of its positional arguments. */
const COMMANDS: Record<Command['name'], CommandSpec> = {
  'clients create': { options: ['name', 'scopes', 'owner'], args: [] },
  'clients list': { options: ['owner'], args: [] },
  'clients delete': { options: [], args: ['CLIENT_ID'] },
  'keys list': { options: [], args: [] },
  'keys rotate': { options: [], args: [] },
  'join-tokens create': { options: ['ttl', 'pre-approved', 'label'], args: [] },
  'join-tokens list': { options: [], args: [] },
  'join-tokens revoke': { options: [], args: ['ID'] },
  'workers list': { options: ['status'], args: [] },
  'workers approve': { options: [], args: ['WORKER_ID'] },
  'workers delete': { options: [], args: ['WORKER_ID'] },
  'stacks validate': { options: ['file'], args: [] },
  'stacks create': { options: ['file'], args: [] },
  'stacks list': { options: [], args: [] },
  'stacks get': { options: [], args: ['STACK_ID'] },
  'stacks update': { options: ['file'], args: ['STACK_ID'] },
  'stacks deploy': { options: ['wait'], args: ['STACK_ID'] },
  'stacks delete': { options: ['wait'], args: ['STACK_ID'] },
  'stacks health': { options: [], args: ['STACK_ID'] },
  'jobs list': { options: ['status', 'stack', 'type'], args: [] },
  'jobs get': { options: [], args: ['JOB_ID'] },
  'jobs logs': { options: ['follow'], args: ['JOB_ID'] },
  'jobs cancel': { options: [], args: ['JOB_ID'] },
  'jobs cleanup': { options: [], args: ['JOB_ID'] },
  'drift get': { options: [], args: ['STACK_ID'] },
  'drift ignore': { options: [], args: ['STACK_ID', 'RESOURCE'], repeats: true },
  'drift unignore': { options: [], args: ['STACK_ID', 'RESOURCE'], repeats: true },
  'drift resolve': { options: ['wait'], args: ['STACK_ID'] },
};

const isCommandName = (name: string): name is Command['name'] => Object.hasOwn(COMMANDS, name);

/** Parses the command line; throws UsageError for anything it cannot act on. */
export function parseInvocation(argv: string[], env: CliEnv): Invocation {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    // parseArgs' messages name the option, never its value. Their first sentence is enough.
    const message = err instanceof Error ? err.message : String(err);
    const first = /^.*?\.(?=\s|$)/.exec(message)?.[0] ?? message.split('\n')[0];
    // stackctl has no short options but -h: "-x..." is most likely an ID that starts with "-".
    const hint = /^Unknown option '-[^-]/.test(first) ? ' An ID that starts with "-" goes after "--".' : '';
    throw new UsageError(first + hint);
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true };

  const [group, action, ...rest] = positionals;
  if (group === undefined) throw new UsageError('no command given.');
  if (action === undefined) {
    const known = Object.keys(COMMANDS).filter((command) => command.startsWith(`${group} `));
    const example = known.includes(`${group} list`) ? `${group} list` : known[0];
    throw new UsageError(
      example !== undefined
        ? `"${group}" needs a command, e.g. "${example}".`
        : `unknown command "${group}".`,
    );
  }
  const name = `${group} ${action}`;
  if (!isCommandName(name)) throw new UsageError(`unknown command "${name}".`);
  const spec = COMMANDS[name];
  for (const option of COMMAND_OPTIONS) {
    if (values[option] !== undefined && !spec.options.includes(option))
      throw new UsageError(`"${name}" does not take --${option}.`);
  }
  if (rest.length < spec.args.length) {
    const more = spec.repeats ? ` [${spec.args[spec.args.length - 1]}...]` : '';
    throw new UsageError(`"${name}" needs ${spec.args.join(' ')}${more}.`);
  }
  if (rest.length > spec.args.length && !spec.repeats)
    throw new UsageError(`unexpected argument "${rest[spec.args.length]}".`);

  const command = buildCommand(name, values, rest);
  return { help: false, command, json: values.json ?? false, connection: connectionOf(values, env) };
}

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

type Values = ReturnType<typeof parse>['values'];

function buildCommand(name: Command['name'], values: Values, args: string[]): Command {
  switch (name) {
    case 'clients create': {
      if (values.name === undefined) throw new UsageError('"clients create" needs --name NAME.');
      if (values.scopes === undefined)
        throw new UsageError('"clients create" needs --scopes SCOPE[,SCOPE...].');
      const scopes = values.scopes
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s.length > 0);
      if (scopes.length === 0) throw new UsageError('--scopes needs at least one scope.');
      return { name, clientName: values.name, scopes, owner: values.owner };
    }
    case 'clients list':
      return { name, owner: values.owner };
    case 'clients delete':
      return { name, clientId: args[0] };
    case 'keys list':
    case 'keys rotate':
    case 'join-tokens list':
      return { name };
    case 'join-tokens create':
      return {
        name,
        ttl: values.ttl,
        preApproved: values['pre-approved'],
        labels: values.label === undefined ? undefined : parseLabels(values.label),
      };
    case 'join-tokens revoke':
      return { name, id: args[0] };
    case 'workers list':
      return { name, status: values.status };
    case 'workers approve':
    case 'workers delete':
      return { name, workerId: args[0] };
    case 'stacks validate':
    case 'stacks create':
      return { name, definition: readDefinition(name, values.file) };
    case 'stacks list':
      return { name };
    case 'stacks get':
    case 'stacks health':
    case 'drift get':
      return { name, stackId: args[0] };
    case 'stacks update':
      return { name, stackId: args[0], definition: readDefinition(name, values.file) };
    case 'stacks deploy':
    case 'stacks delete':
    case 'drift resolve':
      return { name, stackId: args[0], wait: values.wait ?? false };
    case 'jobs list':
      return { name, status: values.status, stackId: values.stack, type: values.type };
    case 'jobs get':
    case 'jobs cancel':
    case 'jobs cleanup':
      return { name, jobId: args[0] };
    case 'jobs logs':
      return { name, jobId: args[0], follow: values.follow ?? false };
    case 'drift ignore':
    case 'drift unignore':
      return { name, stackId: args[0], resources: args.slice(1) };
  }
}

/**
 * The definition file `--file` names, read before anything is sent: a missing option, a file that
 * cannot be read or one larger than the service accepts is a command line error. Read in bounded
 * chunks, so a pipe (`--file <(...)`) works and a huge file is not read whole.
 */
function readDefinition(command: string, path: string | undefined): DefinitionFile {
  if (path === undefined || path === '') throw new UsageError(`"${command}" needs --file PATH.`);
  const shown = JSON.stringify(path);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new UsageError(`cannot read --file ${shown}: ${describeFsError(err)}.`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for (;;) {
      const chunk = Buffer.allocUnsafe(64 * 1024);
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(chunk.subarray(0, read));
      size += read;
      if (size > MAX_DEFINITION_BYTES)
        throw new UsageError(
          `--file ${shown} is larger than 1 MiB (${MAX_DEFINITION_BYTES} bytes), the most the service accepts.`,
        );
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read --file ${shown}: ${describeFsError(err)}.`);
  } finally {
    closeSync(fd);
  }
  return { path, data: Buffer.concat(chunks, size) };
}

/** A file system error without the path Node puts in its message: "no such file or directory". */
function describeFsError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const reason = /^[A-Z]+: ([^,]+)/.exec(err.message)?.[1];
  const code = (err as Error & { code?: unknown }).code;
  if (reason !== undefined) return reason;
  return typeof code === 'string' ? code : err.message;
}

/** `--label KEY=VALUE` options as an object; the service judges the keys and values. */
function parseLabels(pairs: string[]): Record<string, string> {
  const labels = new Map<string, string>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new UsageError(`--label wants KEY=VALUE, got ${JSON.stringify(pair)}.`);
    const key = pair.slice(0, eq);
    if (labels.has(key)) throw new UsageError(`--label ${JSON.stringify(key)} is given twice.`);
    labels.set(key, pair.slice(eq + 1));
  }
  // fromEntries defines own properties: a key such as __proto__ stays a label.
  return Object.fromEntries(labels);
}

/** An option, else its environment variable; an empty value counts as unset. */
const pick = (flag: string | undefined, fromEnv: string | undefined): string | undefined =>
  flag !== undefined && flag !== '' ? flag : fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined;

function connectionOf(values: Values, env: CliEnv): Connection {
  const server = serverUrl(pick(values.server, env.STACKCTL_SERVER) ?? DEFAULT_SERVER);
  const clientId = pick(values['client-id'], env.STACKCTL_CLIENT_ID);
  if (clientId === undefined)
    throw new UsageError('no client id: give --client-id or set STACKCTL_CLIENT_ID.');
  const clientSecret = pick(values['client-secret'], env.STACKCTL_CLIENT_SECRET);
  if (clientSecret === undefined)
    throw new UsageError('no client secret: give --client-secret or set STACKCTL_CLIENT_SECRET.');
  return { server, clientId, clientSecret };
}

function serverUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--server ${JSON.stringify(text)} is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError('--server must be an http:// or https:// URL.');
  // Not echoed: user information in the URL may be a password.
  if (url.username !== '' || url.password !== '')
    throw new UsageError('--server must not contain a user name or password.');
  if (url.search !== '' || url.hash !== '')
    throw new UsageError('--server must not have a query or fragment.');
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}
