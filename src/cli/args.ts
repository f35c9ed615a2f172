import { parseArgs } from 'node:util';
import { readDefinition, type DefinitionFile } from './definition-file.js';
import { UsageError } from './errors.js';

export const DEFAULT_SERVER = 'http://localhost:5260';

/** The environment variables stackctl reads (main.ts passes them in). */
export interface CliEnv {
  STACKCTL_SERVER?: string;
  STACKCTL_CLIENT_ID?: string;
  STACKCTL_CLIENT_SECRET?: string;
  /** The join token of `tunnel install-command` when no --token-file is given. */
  STACKCTL_JOIN_TOKEN?: string;
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
  | { name: 'stacks validate'; definition: DefinitionFile; reading: DefinitionReading }
  | { name: 'stacks create'; definition: DefinitionFile; reading: DefinitionReading }
  | { name: 'stacks list' }
  | { name: 'stacks get'; stackId: string }
  | { name: 'stacks update'; stackId: string; definition: DefinitionFile; reading: DefinitionReading }
  | { name: 'stacks export'; stackId: string; format: string | undefined }
  | { name: 'stacks deploy'; stackId: string; wait: boolean }
  | { name: 'stacks delete'; stackId: string; wait: boolean; deleteVolumes: boolean }
  | { name: 'stacks health'; stackId: string }
  | { name: 'stacks logs'; stackId: string; filters: StackLogFilters; follow: boolean }
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
  | { name: 'drift resolve'; stackId: string; wait: boolean }
  | { name: 'tunnel status' }
  | { name: 'tunnel start' }
  | { name: 'tunnel stop' }
  | { name: 'tunnel registry-url' }
  | { name: 'tunnel topology' }
  | { name: 'tunnel subdomains' }
  | { name: 'tunnel services'; baseId: string }
  | { name: 'tunnel validate-url'; url: string; save: boolean }
  | { name: 'tunnel install-command'; token: JoinTokenSource }
  | { name: 'debug bundle'; output: string | undefined }
  | { name: 'mcp' };

/**
 * How the service is to read a definition file (docs/compose.md): the query parameters, and the
 * variables of `--var NAME=VALUE` and `--env-file FILE` (a JSON body carries them). The service
 * judges every value.
 */
export interface DefinitionReading {
  query: Record<string, string>;
  variables: Record<string, string> | undefined;
}

/** `stacks logs` filters, passed to the service as they are given (it judges them). */
export interface StackLogFilters {
  service?: string;
  since?: string;
  until?: string;
  limit?: string;
}

/**
 * Where `tunnel install-command` reads the join token: a file, standard input or the environment,
 * never an argument, which every user of the machine can read in the process list.
 */
export type JoinTokenSource =
  { from: 'file'; path: string } | { from: 'stdin' } | { from: 'env'; value: string };

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
  'token-file': { type: 'string' },
  'no-save': { type: 'boolean' },
  output: { type: 'string', short: 'o' },
  service: { type: 'string' },
  since: { type: 'string' },
  until: { type: 'string' },
  limit: { type: 'string' },
  format: { type: 'string' },
  stackkit: { type: 'string' },
  variant: { type: 'string' },
  profiles: { type: 'string' },
  var: { type: 'string', multiple: true },
  'env-file': { type: 'string' },
  'delete-volumes': { type: 'boolean' },
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
  'token-file',
  'no-save',
  'output',
  'service',
  'since',
  'until',
  'limit',
  'format',
  'stackkit',
  'variant',
  'profiles',
  'var',
  'env-file',
  'delete-volumes',
] as const;
type CommandOption = (typeof COMMAND_OPTIONS)[number];

interface CommandSpec {
  options: CommandOption[];
  /** Names of the positional arguments. */
  args: string[];
  /** The last argument may be given more than once. */
  repeats?: true;
}

/** What the definition commands take besides --file. */
const READING_OPTIONS = [
  'file',
  'format',
  'name',
  'stackkit',
  'variant',
  'profiles',
  'var',
  'env-file',
] as const;

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
  'stacks validate': { options: [...READING_OPTIONS], args: [] },
  'stacks create': { options: [...READING_OPTIONS], args: [] },
  'stacks list': { options: [], args: [] },
  'stacks get': { options: [], args: ['STACK_ID'] },
  'stacks update': { options: [...READING_OPTIONS], args: ['STACK_ID'] },
  'stacks export': { options: ['format'], args: ['STACK_ID'] },
  'stacks deploy': { options: ['wait'], args: ['STACK_ID'] },
  'stacks delete': { options: ['wait', 'delete-volumes'], args: ['STACK_ID'] },
  'stacks health': { options: [], args: ['STACK_ID'] },
  'stacks logs': { options: ['service', 'since', 'until', 'limit', 'follow'], args: ['STACK_ID'] },
  'jobs list': { options: ['status', 'stack', 'type'], args: [] },
  'jobs get': { options: [], args: ['JOB_ID'] },
  'jobs logs': { options: ['follow'], args: ['JOB_ID'] },
  'jobs cancel': { options: [], args: ['JOB_ID'] },
  'jobs cleanup': { options: [], args: ['JOB_ID'] },
  'drift get': { options: [], args: ['STACK_ID'] },
  'drift ignore': { options: [], args: ['STACK_ID', 'RESOURCE'], repeats: true },
  'drift unignore': { options: [], args: ['STACK_ID', 'RESOURCE'], repeats: true },
  'drift resolve': { options: ['wait'], args: ['STACK_ID'] },
  'tunnel status': { options: [], args: [] },
  'tunnel start': { options: [], args: [] },
  'tunnel stop': { options: [], args: [] },
  'tunnel registry-url': { options: [], args: [] },
  'tunnel topology': { options: [], args: [] },
  'tunnel subdomains': { options: [], args: [] },
  'tunnel services': { options: [], args: ['BASE_ID'] },
  'tunnel validate-url': { options: ['no-save'], args: ['URL'] },
  'tunnel install-command': { options: ['token-file'], args: [] },
  'debug bundle': { options: ['output'], args: [] },
  mcp: { options: [], args: [] },
};

const TOKEN_WAYS = '--token-file FILE, --token-file - (standard input) or STACKCTL_JOIN_TOKEN';

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
    // stackctl has no short options but -h and -o: "-x..." is most likely an ID that starts with "-".
    const hint = /^Unknown option '-[^-]/.test(first) ? ' An ID that starts with "-" goes after "--".' : '';
    throw new UsageError(first + hint);
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true };

  const [group, action, ...more] = positionals;
  if (group === undefined) throw new UsageError('no command given.');
  // `mcp` is the one command of a single word.
  const single = isCommandName(group);
  if (!single && action === undefined) {
    const known = Object.keys(COMMANDS).filter((command) => command.startsWith(`${group} `));
    const example = known.includes(`${group} list`) ? `${group} list` : known[0];
    throw new UsageError(
      example !== undefined
        ? `"${group}" needs a command, e.g. "${example}".`
        : `unknown command "${group}".`,
    );
  }
  const name = single ? group : `${group} ${action}`;
  if (!isCommandName(name)) throw new UsageError(`unknown command "${name}".`);
  const rest = single ? positionals.slice(1) : more;
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
    throw new UsageError(
      name === 'tunnel install-command'
        ? // Not echoed: it is most likely the token itself.
          `"${name}" takes no argument: give the join token by ${TOKEN_WAYS}, not on the command line, where other users of the machine can read it.`
        : `unexpected argument "${rest[spec.args.length]}".`,
    );

  if (name === 'mcp') refuseForMcp(values);
  const command = buildCommand(name, values, rest, env);
  return { help: false, command, json: values.json ?? false, connection: connectionOf(values, env, name) };
}

function parse(argv: string[]) {
  return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
}

type Values = ReturnType<typeof parse>['values'];

function buildCommand(name: Command['name'], values: Values, args: string[], env: CliEnv): Command {
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
      return { name, definition: readDefinition(name, values.file), reading: readingOf(values) };
    case 'stacks list':
      return { name };
    case 'stacks get':
    case 'stacks health':
    case 'drift get':
      return { name, stackId: args[0] };
    case 'stacks update':
      return {
        name,
        stackId: args[0],
        definition: readDefinition(name, values.file),
        reading: readingOf(values),
      };
    case 'stacks export':
      return { name, stackId: args[0], format: values.format };
    case 'stacks logs': {
      const filters: StackLogFilters = {};
      for (const key of ['service', 'since', 'until', 'limit'] as const) {
        const value = values[key];
        if (value === '') throw new UsageError(`--${key} needs a value.`);
        if (value !== undefined) filters[key] = value;
      }
      return { name, stackId: args[0], filters, follow: values.follow ?? false };
    }
    case 'stacks delete':
      return {
        name,
        stackId: args[0],
        wait: values.wait ?? false,
        deleteVolumes: values['delete-volumes'] ?? false,
      };
    case 'stacks deploy':
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
    case 'tunnel status':
    case 'tunnel start':
    case 'tunnel stop':
    case 'tunnel registry-url':
    case 'tunnel topology':
    case 'tunnel subdomains':
      return { name };
    case 'tunnel services':
      return { name, baseId: args[0] };
    case 'tunnel validate-url':
      return { name, url: args[0], save: !(values['no-save'] ?? false) };
    case 'tunnel install-command':
      return { name, token: joinTokenSource(values['token-file'], env.STACKCTL_JOIN_TOKEN) };
    case 'debug bundle':
      if (values.output === '') throw new UsageError('-o needs a file name.');
      return { name, output: values.output };
    case 'mcp':
      return { name };
  }
}

/**
 * `mcp` runs as a desktop client's child for hours: its arguments sit in the client's configuration
 * and in the process list, so the secret comes from the environment only; and its standard output
 * is JSON-RPC, so --json has nothing to change.
 */
function refuseForMcp(values: Values): void {
  if (values['client-secret'] !== undefined)
    throw new UsageError(
      '"mcp" takes the client secret from STACKCTL_CLIENT_SECRET only, not --client-secret.',
    );
  if (values.json !== undefined)
    throw new UsageError('"mcp" speaks JSON-RPC on standard output; --json does not apply.');
}

/** The one place the join token comes from; giving it two ways is a mistake worth stopping at. */
function joinTokenSource(file: string | undefined, fromEnv: string | undefined): JoinTokenSource {
  const env = fromEnv === '' ? undefined : fromEnv;
  if (file !== undefined && env !== undefined)
    throw new UsageError('give the join token one way: --token-file or STACKCTL_JOIN_TOKEN, not both.');
  if (file === '') throw new UsageError('--token-file needs a file name, or "-" for standard input.');
  if (file === '-') return { from: 'stdin' };
  if (file !== undefined) return { from: 'file', path: file };
  if (env !== undefined) return { from: 'env', value: env };
  throw new UsageError(`"tunnel install-command" needs the join token: ${TOKEN_WAYS}.`);
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

function connectionOf(values: Values, env: CliEnv, name: Command['name']): Connection {
  const server = serverUrl(pick(values.server, env.STACKCTL_SERVER) ?? DEFAULT_SERVER);
  const clientId = pick(values['client-id'], env.STACKCTL_CLIENT_ID);
  if (clientId === undefined)
    throw new UsageError('no client id: give --client-id or set STACKCTL_CLIENT_ID.');
  const clientSecret = pick(values['client-secret'], env.STACKCTL_CLIENT_SECRET);
  if (clientSecret === undefined)
    throw new UsageError(
      name === 'mcp'
        ? 'no client secret: set STACKCTL_CLIENT_SECRET.'
        : 'no client secret: give --client-secret or set STACKCTL_CLIENT_SECRET.',
    );
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

/** The query and variables of a definition command's options. */
function readingOf(values: Values): DefinitionReading {
  const query: Record<string, string> = {};
  for (const key of ['format', 'name', 'stackkit', 'variant', 'profiles'] as const) {
    const value = values[key];
    if (value === '') throw new UsageError(`--${key} needs a value.`);
    if (value !== undefined) query[key] = value;
  }
  let variables: Map<string, string> | undefined;
  const set = (key: string, value: string) => (variables ??= new Map()).set(key, value);
  if (values['env-file'] !== undefined) {
    const file = readDefinition('--env-file', values['env-file']);
    for (const [key, value] of parseEnvFile(Buffer.from(file.data).toString('utf8'))) set(key, value);
  }
  for (const pair of values.var ?? []) {
    const eq = pair.indexOf('=');
    // The value is not echoed: it may be a password.
    if (eq < 1) throw new UsageError('--var wants NAME=VALUE.');
    set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return { query, variables: variables === undefined ? undefined : Object.fromEntries(variables) };
}

/**
 * A `.env` file as docker compose reads one: `NAME=VALUE` lines, `export ` allowed before the name,
 * `#` comments and blank lines skipped, a value in single quotes taken as it is, in double quotes
 * with `\n`, `\"` and `\\` unescaped, an unquoted one cut at ` #` and trimmed.
 */
export function parseEnvFile(text: string): [string, string][] {
  const pairs: [string, string][] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.replace(/^\s*export\s+/, '').trim();
    if (line === '' || line.startsWith('#')) return;
    const eq = line.indexOf('=');
    if (eq < 1) throw new UsageError(`--env-file line ${i + 1} is not NAME=VALUE.`);
    const name = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (value.startsWith("'") && value.endsWith("'") && value.length >= 2) value = value.slice(1, -1);
    else if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
      value = value.slice(1, -1).replace(/\\([n"\\])/g, (_m, c: string) => (c === 'n' ? '\n' : c));
    } else value = value.replace(/\s+#.*$/, '');
    pairs.push([name, value]);
  });
  return pairs;
}
