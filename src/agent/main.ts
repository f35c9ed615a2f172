#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, FatalAgentError } from './agent.js';
import { parseUlimits } from './drivers/docker.driver.js';
import { agentLogger } from './logger.js';
import { parseEndpointList, parseServerList } from './server-addresses.js';

const USAGE = `usage: stack-agent --server URL[,URL...] [--token-file FILE] [--data-dir DIR] [--name NAME]
                   [--driver docker|process] [--ca-fingerprint SHA256] [--label key=value ...]
                   [--address ADDRESS] [--agent-endpoint HOST:PORT[,HOST:PORT...]] [--log-level LEVEL]
                   [--probe-port PORT (5264; 0: any; off: none)] [--probe-bind HOST (0.0.0.0)]
                   [--docker-socket PATH] [--docker-ulimits nofile=1024:1024,...]
                   [--allow-host-path DIR ...]
--server and --agent-endpoint may be repeated or hold comma-separated lists (one per replica, or
names that resolve to several); the agent moves on to the next when one fails.
The join token comes from --token-file, or the environment variable STACK_AGENT_TOKEN, or
--token TOKEN (which any local user can read in the process list: avoid it).
--allow-host-path (repeatable; or STACK_AGENT_ALLOW_HOST_PATH, a list separated by ':') names the
host directories docker services may bind-mount; without it every bind is refused.`;

const TOKEN_ENV = 'STACK_AGENT_TOKEN';
const ALLOW_HOST_PATH_ENV = 'STACK_AGENT_ALLOW_HOST_PATH';

/** The bind-mount allowlist from --allow-host-path and the environment: absolute, resolved, unique. */
function allowedHostPaths(args: string[], env: NodeJS.ProcessEnv): string[] {
  const given = [...args, ...(env[ALLOW_HOST_PATH_ENV] ?? '').split(':')].filter(Boolean);
  for (const dir of given)
    if (!isAbsolute(dir)) fail(`--allow-host-path wants an absolute directory, got ${dir}`);
  return [...new Set(given.map((dir) => resolve(dir)))];
}

/** The join token from at most one of its three sources; empty when none is given. */
function joinToken(file: string | undefined, arg: string | undefined, env: NodeJS.ProcessEnv): string {
  const fromEnv = env[TOKEN_ENV] || undefined;
  const given = [file !== undefined, arg !== undefined, fromEnv !== undefined].filter(Boolean).length;
  if (given > 1) fail(`give the join token one way: --token-file, ${TOKEN_ENV} or --token`);
  if (file === undefined) return (arg ?? fromEnv ?? '').trim();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    fail(
      `--token-file: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const token = text.trim();
  if (!token || /\s/.test(token)) fail(`--token-file: ${file} must hold the join token and nothing else`);
  return token;
}

function fail(message: string): never {
  process.stderr.write(`stack-agent: ${message}\n`);
  process.exit(2);
}

function main(): void {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        server: { type: 'string', multiple: true, default: [] },
        token: { type: 'string' },
        'token-file': { type: 'string' },
        'data-dir': { type: 'string', default: './agent-data' },
        name: { type: 'string' },
        driver: { type: 'string', default: 'process' },
        'ca-fingerprint': { type: 'string' },
        label: { type: 'string', multiple: true, default: [] },
        address: { type: 'string' },
        'agent-endpoint': { type: 'string', multiple: true },
        'probe-port': { type: 'string', default: '5264' },
        'probe-bind': { type: 'string', default: '0.0.0.0' },
        'log-level': { type: 'string', default: 'info' },
        'docker-socket': { type: 'string' },
        'docker-ulimits': { type: 'string' },
        'allow-host-path': { type: 'string', multiple: true, default: [] },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    }));
  } catch (err) {
    process.stderr.write(`stack-agent: ${(err as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.server.length === 0 || (values.driver !== 'docker' && values.driver !== 'process')) {
    process.stderr.write(`stack-agent: --server is required and --driver is docker or process\n${USAGE}\n`);
    process.exit(2);
  }
  let servers: string[];
  let agentEndpoints;
  try {
    servers = parseServerList(values.server);
    agentEndpoints = values['agent-endpoint'] && parseEndpointList(values['agent-endpoint']);
  } catch (err) {
    fail((err as Error).message);
  }
  if (values['probe-port'] !== 'off' && !/^\d{1,5}$/.test(values['probe-port'])) {
    process.stderr.write(`stack-agent: --probe-port wants a port number or off\n`);
    process.exit(2);
  }
  if (values['docker-ulimits'] !== undefined) {
    try {
      parseUlimits(values['docker-ulimits']);
    } catch (err) {
      process.stderr.write(`stack-agent: --docker-ulimits: ${(err as Error).message}\n`);
      process.exit(2);
    }
  }
  const labels: Record<string, string> = {};
  for (const pair of values.label) {
    const eq = pair.indexOf('=');
    if (eq < 1) {
      process.stderr.write(`stack-agent: --label wants key=value, got ${pair}\n`);
      process.exit(2);
    }
    labels[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  const allowHostPaths = allowedHostPaths(values['allow-host-path'], process.env);
  const token = joinToken(values['token-file'], values.token, process.env);
  // The agent's one read of its environment. The join token is not passed on: a stack's ${NAME}
  // values come from this environment, and no stack may read the token.
  const env = { ...process.env };
  delete env[TOKEN_ENV];
  const log = agentLogger(values['log-level']);
  const agent = new Agent(
    {
      servers,
      token: token || undefined,
      dataDir: resolve(values['data-dir']),
      name: values.name,
      driver: values.driver,
      caFingerprint: values['ca-fingerprint'],
      labels,
      address: values.address,
      version: pkg.version,
      agentEndpoints,
      dockerSocket: values['docker-socket'],
      dockerUlimits: values['docker-ulimits'],
      allowHostPaths,
      env,
      probe:
        values['probe-port'] === 'off'
          ? undefined
          : { host: values['probe-bind'], port: Number(values['probe-port']) },
    },
    log,
  );
  const stop = (signal: string) => {
    log.info({ signal }, 'stopping');
    agent.stop();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  agent.run().then(
    () => {
      log.info('stopped');
      process.exitCode = 0;
    },
    (err: unknown) => {
      log.fatal(
        { err: (err as Error).message },
        err instanceof FatalAgentError ? 'cannot continue' : 'agent failed',
      );
      process.exitCode = 1;
    },
  );
}

main();
