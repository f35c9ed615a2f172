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

Global options:
  --server URL            Base URL of the service (env STACKCTL_SERVER, default ${DEFAULT_SERVER})
  --client-id ID          OAuth client id (env STACKCTL_CLIENT_ID)
  --client-secret SECRET  OAuth client secret (env STACKCTL_CLIENT_SECRET; prefer the environment:
                          other users of the machine can see command lines)
  --json                  Print the service's JSON instead of text
  -h, --help              Show this help

Exit status: 0 done, 1 the service or the network failed, 2 the command line is wrong.
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
  | { name: 'workers delete'; workerId: string };

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
} as const;

const COMMAND_OPTIONS = ['name', 'scopes', 'owner', 'ttl', 'pre-approved', 'label', 'status'] as const;
type CommandOption = (typeof COMMAND_OPTIONS)[number];

/** Per command: the command options it accepts and the names of its positional arguments. */
const COMMANDS: Record<Command['name'], { options: CommandOption[]; args: string[] }> = {
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
    const known = Object.keys(COMMANDS).some((command) => command.startsWith(`${group} `));
    throw new UsageError(
      known ? `"${group}" needs a command, e.g. "${group} list".` : `unknown command "${group}".`,
    );
  }
  const name = `${group} ${action}`;
  if (!isCommandName(name)) throw new UsageError(`unknown command "${name}".`);
  const spec = COMMANDS[name];
  for (const option of COMMAND_OPTIONS) {
    if (values[option] !== undefined && !spec.options.includes(option))
      throw new UsageError(`"${name}" does not take --${option}.`);
  }
  if (rest.length < spec.args.length) throw new UsageError(`"${name}" needs ${spec.args.join(' ')}.`);
  if (rest.length > spec.args.length)
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
  }
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
