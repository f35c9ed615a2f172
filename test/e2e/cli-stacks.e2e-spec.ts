import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentProcess } from '../support/agent-process.js';
import { ADMIN, eventually, startTestApp, type TestApp } from '../support/app.js';
import {
  AGENT,
  CLI,
  type CliRun,
  jsonOf,
  requireBuilt,
  startStackctl as startCli,
} from '../support/stackctl.js';
import { freePort, HTTP_SERVICE, httpGet } from '../support/stacks.js';

/** The agent's own secret, which a stack's `${NAME}` reference resolves on the node. */
const NODE_SECRET = 'n0de-s3cret-for-the-cli-test';

/** stackctl started; the node's secret never shows either. */
const startStackctl = (args: string[], env: Record<string, string> = {}) =>
  startCli(args, env, { secrets: [NODE_SECRET] });

const stackctl = (args: string[], env: Record<string, string> = {}): Promise<CliRun> =>
  startStackctl(args, env).done;

/** stdout of a run that must succeed. */
function ok(run: CliRun): string {
  expect(run.code, run.stderr).toBe(0);
  return run.stdout;
}

interface StackJson {
  id: string;
  name: string;
  status: string;
  revision: number;
  deployed_revision: number | null;
  worker_id: string | null;
  services: string[];
}

interface JobJson {
  id: string;
  type: string;
  stack_id: string;
  status: string;
  error: string | null;
  results: { name: string; action: string; ok: boolean; error: string | null }[] | null;
}

interface DriftJson {
  stack_id: string;
  status: string;
  items: { resource: string; kind: string; ignored: boolean }[];
  ignored_resources: string[];
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** One process-driver service, the fixture HTTP service on `port`, passing its health check. */
function stackYaml(name: string, port: number, options: { version?: string; zone?: string } = {}): string {
  return `name: ${name}
stackkit: basement-kit
variant: default
services:
  web:
    command: ["${process.execPath}", "${HTTP_SERVICE}"]
    env:
      PORT: "${port}"
      VERSION: "${options.version ?? '1'}"
      SECRET_VALUE: "\${STACK_CLI_SECRET}"
    ports: [${port}]
    restart: never
    resources: { cpu: 0.1, memory: 64Mi }
    health_check: { path: /health, port: ${port}, interval: 1s }
${options.zone ? `    placement:\n      labels:\n        zone: ${options.zone}\n` : ''}`;
}

/** Valid, with one warning on line 7 (an unknown key whose name carries an escape character). */
const VALID_WITH_WARNING = `name: checked
stackkit: basement-kit
variant: default
services:
  web:
    image: nginx:1.27
    "flavour\\e[31m": spicy
`;

/** Two errors at known places. */
const INVALID = `name: broken
stackkit: basement-kit
services:
  Web_Server:
    image: nginx
  api:
    image: api
    restart: sometimes
`;

describe('stackctl stacks, jobs and drift against the running service and a real agent', () => {
  let t: TestApp;
  let env: Record<string, string>;
  let agent: AgentProcess;
  let workerId: string;
  let dir: string;

  /** Writes `text` to a file in the test's directory; its path. */
  const file = (name: string, text: string | Buffer): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const cli = (...args: string[]) => stackctl(args, env);

  beforeAll(async () => {
    requireBuilt([CLI, AGENT]);
    dir = mkdtempSync(join(tmpdir(), 'stackctl-'));
    t = await startTestApp({
      env: {
        HEARTBEAT_INTERVAL: '300ms',
        DRIFT_CHECK_INTERVAL: '1s',
        WORKER_DEGRADED_PERCENT: '100',
        WORKER_UNHEALTHY_PERCENT: '100',
        // Short-lived tokens: a --wait outlives the first one stackctl fetches.
        ACCESS_TOKEN_TTL: '10s',
      },
    });
    env = {
      STACKCTL_SERVER: t.url,
      STACKCTL_CLIENT_ID: ADMIN.clientId,
      STACKCTL_CLIENT_SECRET: ADMIN.secret,
    };
    const joinToken = jsonOf<{ token: string }>(
      await stackctl(['--json', 'join-tokens', 'create', '--pre-approved'], env),
    );
    agent = AgentProcess.start({
      server: t.url,
      token: joinToken.token,
      name: 'cli-stack-node',
      env: { STACK_CLI_SECRET: NODE_SECRET },
    });
    await eventually(async () => {
      const { workers } = jsonOf<{ workers: { id: string; connected: boolean; status: string }[] }>(
        await stackctl(['--json', 'workers', 'list'], env),
      );
      const w = workers.find((x) => x.connected && ['healthy', 'degraded'].includes(x.status));
      workerId = w?.id ?? '';
      return w !== undefined;
    }, 20_000);
  });

  afterAll(async () => {
    await agent?.stop();
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('--help lists the new commands', async () => {
    const help = ok(await stackctl(['--help']));
    for (const command of [
      'stacks validate --file PATH',
      'stacks create --file PATH',
      'stacks list',
      'stacks get STACK_ID',
      'stacks update STACK_ID --file PATH',
      'stacks deploy STACK_ID [--wait]',
      'stacks delete STACK_ID [--wait]',
      'stacks health STACK_ID',
      'jobs list [--status STATE] [--stack STACK_ID] [--type TYPE]',
      'jobs get JOB_ID',
      'jobs logs JOB_ID [--follow]',
      'jobs cancel JOB_ID',
      'jobs cleanup JOB_ID',
      'drift get STACK_ID',
      'drift ignore STACK_ID RESOURCE [RESOURCE...]',
      'drift unignore STACK_ID RESOURCE [RESOURCE...]',
      'drift resolve STACK_ID [--wait]',
    ])
      expect(help).toContain(command);
  });

  it('a missing, unreadable or too large --file and missing arguments exit 2 before any request', async () => {
    const big = file('big.yaml', Buffer.alloc(1024 * 1024 + 1, 0x61));
    const exact = file('exact.yaml', Buffer.alloc(1024 * 1024, 0x61));
    const missing = join(dir, 'no-such.yaml');
    // A server nobody listens on: these must fail before contacting it.
    const offline = { ...env, STACKCTL_SERVER: `http://127.0.0.1:${await freePort()}` };
    for (const [args, message] of [
      [['stacks', 'create'], /^stackctl: "stacks create" needs --file PATH\.\n/],
      [['stacks', 'validate'], /^stackctl: "stacks validate" needs --file PATH\.\n/],
      [['stacks', 'update', 'some-id'], /^stackctl: "stacks update" needs --file PATH\.\n/],
      [
        ['stacks', 'create', '--file', missing],
        new RegExp(`^stackctl: cannot read --file "${missing}": no such file or directory\\.\\n`),
      ],
      [
        ['stacks', 'validate', '--file', dir],
        new RegExp(`^stackctl: cannot read --file "${dir}": illegal operation on a directory\\.\\n`),
      ],
      [
        ['stacks', 'validate', '--file', big],
        new RegExp(
          `^stackctl: --file "${big}" is larger than 1 MiB \\(1048576 bytes\\), the most the service accepts\\.\\n`,
        ),
      ],
      [['stacks', 'update', '--file', exact], /^stackctl: "stacks update" needs STACK_ID\.\n/],
      [
        ['drift', 'ignore', 'some-id'],
        /^stackctl: "drift ignore" needs STACK_ID RESOURCE \[RESOURCE\.\.\.\]\.\n/,
      ],
      [['stacks', 'deploy', 'some-id', '--follow'], /^stackctl: "stacks deploy" does not take --follow\.\n/],
      [['jobs', 'logs', 'some-id', '--wait'], /^stackctl: "jobs logs" does not take --wait\.\n/],
      [['stacks', 'get', 'a', 'b'], /^stackctl: unexpected argument "b"\.\n/],
      [['drift'], /^stackctl: "drift" needs a command, e\.g\. "drift get"\.\n/],
    ] as const) {
      const run = await stackctl([...args], offline);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(message);
      expect(run.stderr).toContain("Run 'stackctl --help' for usage.");
    }
    // A file of exactly 1 MiB is not refused locally: the service reads it (and finds it invalid).
    const atLimit = await stackctl(['stacks', 'validate', '--file', exact], env);
    expect(atLimit.code).toBe(1);
    expect(atLimit.stderr).toMatch(/\((invalid_yaml|validation_failed), request \S+\)/);
  });

  it('takes Compose files with --name, --var, --env-file and --profiles, and exports them', async () => {
    const compose = file(
      'compose.yaml',
      'services:\n  web:\n    image: nginx:1.27\n    environment: { GREETING: "${GREETING:?say hello}", TOKEN: "${TOKEN}" }\n    container_name: w\n  debug:\n    image: busybox\n    profiles: [debug]\n',
    );
    const envFile = file('.env', '# comment\nexport GREETING="hi there"\nTOKEN=from-env-file # trailing\n');
    const valid = ok(
      await cli(
        'stacks',
        'validate',
        '--file',
        compose,
        '--name',
        'cli-compose',
        '--env-file',
        envFile,
        '--profiles',
        'debug',
      ),
    );
    expect(valid.split('\n')[0]).toBe(
      'valid (compose): stack kit basement-kit, variant default, services debug, web',
    );
    expect(valid).toContain('services.web.container_name');
    // --var wins over the file, as the later source.
    const created = jsonOf<StackJson & { id: string; format: string }>(
      await cli(
        '--json',
        'stacks',
        'create',
        '--file',
        compose,
        '--name',
        'cli-compose',
        '--env-file',
        envFile,
        '--var',
        'TOKEN=from-var',
      ),
    );
    expect(created).toMatchObject({ name: 'cli-compose', format: 'compose', services: ['web'] });
    const exported = ok(await cli('stacks', 'export', created.id, '--format', 'compose'));
    expect(exported).toContain('GREETING: hi there');
    expect(exported).toContain('TOKEN: from-var');
    const missing = await cli('stacks', 'validate', '--file', compose, '--name', 'cli-compose');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('say hello');
    ok(await cli('stacks', 'delete', created.id, '--delete-volumes', '--wait'));
  });

  it('stacks validate: "valid" with warnings, or each error as line:column path [category] message', async () => {
    const good = ok(await cli('stacks', 'validate', '--file', file('good.yaml', VALID_WITH_WARNING)));
    expect(good).toBe(
      'valid (stack): stack kit basement-kit, variant default, services web\n' +
        '1 warning:\n' +
        '  7:5 services.web.flavour\\u001b[31m [invalid_value] unknown key "flavour\\u001b[31m" is ignored\n',
    );

    const bad = await cli('stacks', 'validate', '--file', file('bad.yaml', INVALID));
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    const [first, ...errors] = bad.stderr.trimEnd().split('\n');
    expect(first).toMatch(
      /^stackctl: The stack definition has 2 errors\. \(validation_failed, request \S+\)$/,
    );
    expect(errors).toEqual([
      expect.stringMatching(/^ {2}4:3 services\.Web_Server \[invalid_service_name\] .*DNS label/),
      '  8:14 services.api.restart [invalid_value] restart must be one of always, on-failure, never',
    ]);

    const yaml = await cli(
      'stacks',
      'validate',
      '--file',
      file('broken.yaml', 'name: shop\nservices:\n  web:\n    image: [nginx\n  api: x\n'),
    );
    expect(yaml.code).toBe(1);
    expect(yaml.stdout).toBe('');
    expect(yaml.stderr).toMatch(
      /^stackctl: The stack definition is not valid YAML: .*\(line 5, column 3\)\. \(invalid_yaml, request \S+\)\n {2}5:3 \S.*\n$/,
    );

    // --json: the service's answer either way; an invalid file still exits 1.
    const summary = jsonOf<{ valid: boolean; services: string[]; warnings: unknown[] }>(
      await cli('--json', 'stacks', 'validate', '--file', join(dir, 'good.yaml')),
    );
    expect(summary).toMatchObject({ valid: true, services: ['web'], warnings: [expect.any(Object)] });
    const problem = await cli('--json', 'stacks', 'validate', '--file', join(dir, 'bad.yaml'));
    expect(problem.code).toBe(1);
    expect(JSON.parse(problem.stdout)).toMatchObject({
      status: 422,
      code: 'validation_failed',
      errors: [
        { path: 'services.Web_Server', category: 'invalid_service_name', line: 4, column: 3 },
        { path: 'services.api.restart', category: 'invalid_value', line: 8, column: 14 },
      ],
    });
    expect(problem.stderr).toMatch(/^stackctl: The stack definition has 2 errors\./);

    // The same errors when creating; nothing is stored.
    const create = await cli('stacks', 'create', '--file', join(dir, 'bad.yaml'));
    expect(create.code).toBe(1);
    expect(create.stderr).toContain('\n  8:14 services.api.restart [invalid_value] restart must be one of');
    expect(jsonOf<{ stacks: StackJson[] }>(await cli('--json', 'stacks', 'list')).stacks).toEqual([]);
  });

  // About forty stackctl processes and a real agent: 20 s on a quiet machine, three times that on a
  // loaded one; the limit guards against a hang, not a slow run.
  it('creates, lists, updates and deploys a stack, follows its jobs, reads health and drift, and deletes it', async () => {
    const port = await freePort();

    // create
    const created = ok(await cli('stacks', 'create', '--file', file('web.yaml', stackYaml('cli-web', port))));
    const stackId = new RegExp(
      `^Created stack "cli-web" \\((${UUID})\\): revision 1, status draft\\.$`,
      'm',
    ).exec(created)?.[1];
    expect(stackId, created).toBeDefined();
    expect(created).toContain(`Deploy it with "stackctl stacks deploy ${stackId}".`);

    // list and get
    const list = ok(await cli('stacks', 'list'))
      .trimEnd()
      .split('\n');
    expect(list[0]).toMatch(/^ID\s+NAME\s+STATUS\s+REVISION\s+DEPLOYED\s+WORKER\s+UPDATED_AT$/);
    expect(list.slice(1)).toEqual([
      expect.stringMatching(new RegExp(`^${stackId}\\s+cli-web\\s+draft\\s+1\\s+-\\s+-\\s+\\S+Z$`)),
    ]);
    const listed = jsonOf<{ stacks: StackJson[] }>(await cli('--json', 'stacks', 'list'));
    expect(listed.stacks).toEqual([
      expect.objectContaining({ id: stackId, name: 'cli-web', status: 'draft' }),
    ]);
    const got = ok(await cli('stacks', 'get', stackId!));
    expect(got).toMatch(new RegExp(`^id:\\s+${stackId}$`, 'm'));
    expect(got).toMatch(/^name:\s+cli-web$/m);
    expect(got).toMatch(/^status:\s+draft$/m);
    expect(got).toMatch(/^stackkit:\s+basement-kit$/m);
    expect(got).toMatch(/^deployed_revision:\s+-$/m);
    expect(got).toMatch(/^services:\s+web$/m);

    // deploy --wait: the job's outcome, and the service answers on the node
    const deployed = await cli('stacks', 'deploy', stackId!, '--wait');
    expect(deployed.code, deployed.stderr).toBe(0);
    const deployJobId = new RegExp(`^id:\\s+(${UUID})$`, 'm').exec(deployed.stdout)?.[1];
    expect(deployJobId, deployed.stdout).toBeDefined();
    expect(deployed.stdout).toMatch(/^type:\s+provision$/m);
    expect(deployed.stdout).toMatch(/^status:\s+succeeded$/m);
    expect(deployed.stdout).toMatch(new RegExp(`^worker_id:\\s+${workerId}$`, 'm'));
    expect(deployed.stdout).toMatch(/^SERVICE\s+ACTION\s+OK\s+ERROR\nweb\s+created\s+yes\s+-$/m);
    // Progress on stderr: it started from the queue and ended as succeeded.
    expect(deployed.stderr).toMatch(new RegExp(`^job ${deployJobId} queued$`, 'm'));
    expect(deployed.stderr).toMatch(new RegExp(`(^|\\n)job ${deployJobId} succeeded\\n$`));
    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '1' });
    expect(await httpGet(port, '/secret')).toEqual({ status: 200, text: NODE_SECRET });

    // update: a new revision; the node keeps revision 1 until the next deploy
    const updated = ok(
      await cli(
        'stacks',
        'update',
        stackId!,
        '--file',
        file('web2.yaml', stackYaml('cli-web', port, { version: '2' })),
      ),
    );
    expect(updated).toMatch(
      new RegExp(
        `^Stack "cli-web" \\(${stackId}\\) is now at revision 2 \\(deployed: revision 1\\)\\.$`,
        'm',
      ),
    );
    expect(jsonOf<StackJson>(await cli('--json', 'stacks', 'get', stackId!))).toMatchObject({
      revision: 2,
      deployed_revision: 1,
      status: 'deployed',
    });

    // deploy without --wait, then jobs logs --follow until the job has ended
    const started = ok(await cli('stacks', 'deploy', stackId!));
    const jobId = new RegExp(
      `^Deploying revision 2 of stack "cli-web": job (${UUID}) is dispatched\\.$`,
      'm',
    ).exec(started)?.[1];
    expect(jobId, started).toBeDefined();
    const followed = ok(await cli('jobs', 'logs', jobId!, '--follow'))
      .trimEnd()
      .split('\n');
    expect(followed.length).toBeGreaterThan(1);
    for (const line of followed) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+Z \S/);
    expect(
      followed.some((l) => / web: configuration changed; replacing$/.test(l)),
      followed.join('\n'),
    ).toBe(true);
    // The log is complete: the job had ended, so its last line (the health check passed) is there.
    expect(followed.some((l) => / web: healthy \(HTTP 200/.test(l))).toBe(true);
    const job = ok(await cli('jobs', 'get', jobId!));
    expect(job).toMatch(/^status:\s+succeeded$/m);
    expect(job).toMatch(/^revision:\s+2$/m);
    expect(job).toMatch(new RegExp(`^stack:\\s+cli-web \\(${stackId}\\)$`, 'm'));
    expect(job).toMatch(/^web\s+replaced\s+yes\s+-$/m);
    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '2' });
    const logsJson = jsonOf<{ job_id: string; lines: { line: string }[]; complete: boolean }>(
      await cli('--json', 'jobs', 'logs', jobId!),
    );
    expect(logsJson).toMatchObject({ job_id: jobId, complete: true });
    expect(logsJson.lines.map((l) => l.line)).toEqual(followed.map((l) => l.slice(l.indexOf(' ') + 1)));

    // jobs list: filters reach the service; the table and --json agree
    const jobs = jsonOf<{ jobs: JobJson[] }>(await cli('--json', 'jobs', 'list', '--stack', stackId!));
    expect(jobs.jobs.map((j) => j.id)).toEqual([jobId, deployJobId]);
    const table = ok(
      await cli('jobs', 'list', '--stack', stackId!, '--type', 'provision', '--status', 'succeeded'),
    )
      .trimEnd()
      .split('\n');
    expect(table[0]).toMatch(
      /^ID\s+TYPE\s+STACK\s+REVISION\s+STATUS\s+PROGRESS\s+CREATED_AT\s+FINISHED_AT\s+ERROR$/,
    );
    expect(table.slice(1)).toEqual([
      expect.stringMatching(
        new RegExp(`^${jobId}\\s+provision\\s+cli-web\\s+2\\s+succeeded\\s+100%\\s+\\S+Z\\s+\\S+Z\\s+-$`),
      ),
      expect.stringMatching(
        new RegExp(`^${deployJobId}\\s+provision\\s+cli-web\\s+1\\s+succeeded\\s+100%\\s`),
      ),
    ]);
    expect(ok(await cli('jobs', 'list', '--stack', stackId!, '--type', 'destroy'))).toBe('No jobs match.\n');
    const badType = await cli('jobs', 'list', '--type', 'explode');
    expect(badType.code).toBe(1);
    expect(badType.stderr).toMatch(
      /^stackctl: The request did not pass validation\. \(validation_failed, request \S+\)\n {2}type: /,
    );

    // A finished job: cleanup and cancel answer with the service's 409
    const cleanup = await cli('jobs', 'cleanup', jobId!);
    expect(cleanup.code).toBe(1);
    expect(cleanup.stderr).toMatch(
      new RegExp(
        `^stackctl: Job ${jobId} succeeded; there is nothing to clean up\\. \\(conflict, request \\S+\\)\\n$`,
      ),
    );
    const cancel = await cli('jobs', 'cancel', jobId!);
    expect(cancel.code).toBe(1);
    expect(cancel.stderr).toMatch(
      new RegExp(
        `^stackctl: Job ${jobId} is already succeeded; there is nothing to cancel\\. \\(conflict, request \\S+\\)\\n$`,
      ),
    );

    // stacks health: a table of the one service, healthy with its check's status code
    await eventually(
      async () =>
        jsonOf<{ overall: string }>(await cli('--json', 'stacks', 'health', stackId!)).overall === 'healthy',
    );
    const health = ok(await cli('stacks', 'health', stackId!))
      .trimEnd()
      .split('\n');
    expect(health[0]).toMatch(
      new RegExp(`^Stack ${stackId}: healthy \\(worker ${workerId}, reported at \\S+Z\\)\\.$`),
    );
    expect(health[1]).toMatch(/^SERVICE\s+STATUS\s+UPTIME\s+CHECK_STATUS\s+LATENCY$/);
    expect(health.slice(2)).toEqual([expect.stringMatching(/^web\s+healthy\s+\d+h\d+m\d+s\s+200\s+\d+ms$/)]);

    // drift get: in sync, then the service killed from outside (restart: never) is missing
    await eventually(
      async () => jsonOf<DriftJson>(await cli('--json', 'drift', 'get', stackId!)).status === 'in_sync',
    );
    const inSync = ok(await cli('drift', 'get', stackId!));
    expect(inSync).toMatch(
      new RegExp(`^Stack ${stackId}: in_sync \\(revision 2, checked at \\S+Z\\)\\.$`, 'm'),
    );
    expect(inSync).toMatch(/^Ignored resources: -$/m);
    expect(inSync).toMatch(/^No drift items\.$/m);

    // The process driver's pid file: the pid on its first line.
    const pidFile = readFileSync(join(agent.dataDir, 'services', stackId!, 'web.pid'), 'utf8');
    const pid = Number(pidFile.split('\n')[0]);
    process.kill(pid, 'SIGKILL');
    await eventually(
      async () => jsonOf<DriftJson>(await cli('--json', 'drift', 'get', stackId!)).status === 'drifted',
    );
    const drifted = ok(await cli('drift', 'get', stackId!))
      .trimEnd()
      .split('\n');
    expect(drifted[0]).toMatch(
      new RegExp(`^Stack ${stackId}: drifted \\(revision 2, checked at \\S+Z\\)\\.$`),
    );
    expect(drifted[2]).toMatch(/^RESOURCE\s+KIND\s+FIELD\s+DESIRED\s+ACTUAL\s+IGNORED$/);
    expect(drifted.slice(3)).toEqual([expect.stringMatching(/^web\s+missing\s+-\s+running\s+\S+\s+no$/)]);

    // drift ignore: an unknown resource is the service's 422; a known one leaves the stack in sync
    const unknown = await cli('drift', 'ignore', stackId!, 'web', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(
      /^stackctl: Some resources are not known in this stack\. \(validation_failed, request \S+\)\n {2}resources\.1: nope is neither a service of the stack nor a drifted resource\n$/,
    );
    const ignored = ok(await cli('drift', 'ignore', stackId!, 'web'));
    expect(ignored).toMatch(/: in_sync \(revision 2, /);
    expect(ignored).toMatch(/^Ignored resources: web$/m);
    expect(ignored).toMatch(/^web\s+missing\s+-\s+running\s+\S+\s+yes$/m);
    const nothing = await cli('drift', 'resolve', stackId!);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(
      new RegExp(
        `^stackctl: Stack ${stackId} has no drift that is not ignored; there is nothing to resolve\\. \\(conflict, `,
      ),
    );
    const unignored = jsonOf<DriftJson>(await cli('--json', 'drift', 'unignore', stackId!, 'web'));
    expect(unignored).toMatchObject({
      status: 'drifted',
      ignored_resources: [],
      items: [{ resource: 'web', ignored: false }],
    });

    // drift resolve --wait: a provision job brings the service back
    const resolved = await cli('drift', 'resolve', stackId!, '--wait');
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stdout).toMatch(/^status:\s+succeeded$/m);
    expect(resolved.stdout).toMatch(/^web\s+(created|started)\s+yes\s+-$/m);
    expect(await httpGet(port, '/version')).toEqual({ status: 200, text: '2' });

    // stacks delete --wait: the destroy job, then the stack is gone
    const deleted = await cli('stacks', 'delete', stackId!, '--wait');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toMatch(/^type:\s+destroy$/m);
    expect(deleted.stdout).toMatch(/^web\s+removed\s+yes\s+-$/m);
    expect(deleted.stdout).toMatch(new RegExp(`\\nDeleted stack ${stackId}\\.\\n$`));
    expect(await httpGet(port, '/version')).toBe('ECONNREFUSED');
    const gone = await cli('stacks', 'get', stackId!);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/\(not_found, request \S+\)\n$/);
    expect(ok(await cli('stacks', 'list'))).toBe('No stacks.\n');
  }, 180_000);

  it('deploy --wait exits 1 when the job does not succeed; cancel and cleanup of a queued job', async () => {
    const port = await freePort();
    // No worker carries zone=nowhere: the job waits in the queue with the reason.
    const stack = jsonOf<StackJson>(
      await cli(
        '--json',
        'stacks',
        'create',
        '--file',
        file('nowhere.yaml', stackYaml('cli-nowhere', port, { zone: 'nowhere' })),
      ),
    );
    const waiting = startStackctl(['stacks', 'deploy', stack.id, '--wait'], env);
    // While it waits, it says why the job stays queued.
    await eventually(() => waiting.stderrSoFar().includes('label zone=nowhere missing'));
    const jobId = new RegExp(`^job (${UUID}) queued: .*label zone=nowhere missing`, 'm').exec(
      waiting.stderrSoFar(),
    )?.[1];
    expect(jobId, waiting.stderrSoFar()).toBeDefined();
    const cancelled = ok(await cli('jobs', 'cancel', jobId!));
    expect(cancelled).toBe(`Cancelled job ${jobId}.\n`);

    const run = await waiting.done;
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(new RegExp(`^id:\\s+${jobId}$`, 'm'));
    expect(run.stdout).toMatch(/^status:\s+cancelled$/m);
    expect(run.stderr).toMatch(
      new RegExp(`\\nstackctl: job ${jobId} cancelled: placement: .*label zone=nowhere missing\\)\\.\\n$`),
    );

    // Cleanup of a cancelled job without a worker: nothing on a node to revert.
    const cleanup = ok(await cli('jobs', 'cleanup', jobId!));
    expect(cleanup).toMatch(new RegExp(`^Cleaned up job ${jobId!}: it is cancelled`));
    expect(cleanup).toContain('It was never placed on a worker: there is nothing to revert on a node.');

    // --json --wait prints the job as the service has it at the end, and still exits 1.
    const waitingJson = cli('--json', 'stacks', 'deploy', stack.id, '--wait');
    let second: JobJson | undefined;
    await eventually(async () => {
      const { jobs } = jsonOf<{ jobs: JobJson[] }>(
        await cli('--json', 'jobs', 'list', '--stack', stack.id, '--status', 'queued'),
      );
      second = jobs[0];
      return second !== undefined;
    });
    expect(jsonOf<JobJson>(await cli('--json', 'jobs', 'cancel', second!.id)).status).toBe('cancelled');
    const runJson = await waitingJson;
    expect(runJson.code).toBe(1);
    expect(JSON.parse(runJson.stdout)).toMatchObject({ id: second!.id, status: 'cancelled' });
    expect(runJson.stderr).toMatch(new RegExp(`^stackctl: job ${second!.id} cancelled`));

    // A wait that outlives its access token (ACCESS_TOKEN_TTL 10s): stackctl fetches a new one
    // before the old one expires, and goes on. A client of its own makes its tokens countable.
    const waiter = jsonOf<{ client_id: string; client_secret: string }>(
      await cli(
        '--json',
        'clients',
        'create',
        '--name',
        'waiter',
        '--scopes',
        'orchestrator:read,orchestrator:write',
      ),
    );
    const tokensOfWaiter = () =>
      t.logs.records().filter((r) => r.audit_action === 'token.issued' && r.actor === waiter.client_id)
        .length;
    const long = startStackctl(['stacks', 'deploy', stack.id, '--wait'], {
      ...env,
      STACKCTL_CLIENT_ID: waiter.client_id,
      STACKCTL_CLIENT_SECRET: waiter.client_secret,
    });
    await eventually(() => tokensOfWaiter() >= 2, 30_000);
    const longJobId = new RegExp(`^job (${UUID}) queued`, 'm').exec(long.stderrSoFar())?.[1];
    expect(longJobId, long.stderrSoFar()).toBeDefined();
    ok(await cli('jobs', 'cancel', longJobId!));
    const longRun = await long.done;
    expect(longRun.stdout + longRun.stderr).not.toContain(waiter.client_secret);
    expect(longRun.code).toBe(1);
    expect(longRun.stdout).toMatch(/^status:\s+cancelled$/m);
    expect(longRun.stderr).toMatch(new RegExp(`\\nstackctl: job ${longJobId} cancelled: `));

    // Never placed: deleting it needs no node.
    const deleted = await cli('stacks', 'delete', stack.id, '--wait');
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toMatch(new RegExp(`\\nDeleted stack ${stack.id}\\.\\n$`));
    expect((await cli('stacks', 'get', stack.id)).code).toBe(1);
  });
});
