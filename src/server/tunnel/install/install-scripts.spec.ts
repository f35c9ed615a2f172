import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { running } from '../../../../test/support/process-state.js';
import { installCommands, InstallScripts } from './install-scripts.js';
import { quotePosix, quotePowerShell } from './shell-quote.js';

const TOKEN = 'sojt_abcdefghijklmnop.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq';
const FINGERPRINT = 'ab'.repeat(32);

/** Stands in for the agent: records how it was started, then stays up like the agent does. */
const FAKE_AGENT = `
import { writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
const argv = process.argv.slice(2);
const dataDir = argv[argv.indexOf('--data-dir') + 1];
writeFileSync(dirname(dataDir) + '/started.json', JSON.stringify({ argv, token: process.env.STACK_AGENT_TOKEN ?? null }));
setInterval(() => {}, 60_000);
`;
const FAKE_SHA256 = createHash('sha256').update(FAKE_AGENT).digest('hex');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `sh -c <script>` without blocking the loop (the loopback server answers its downloads). */
function sh(script: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('installCommands', () => {
  const values = {
    registryUrl: 'https://reg.example.test/',
    token: TOKEN,
    caFingerprint: FINGERPRINT,
    sha256: 'cd'.repeat(32),
  };

  it('gives install.sh every value as a quoted word and the token in its environment', () => {
    const { linux } = installCommands(values);
    expect(linux).toBe(
      "if command -v curl >/dev/null 2>&1; then curl -fsSL 'https://reg.example.test/install.sh'; " +
        "else wget -qO- 'https://reg.example.test/install.sh'; fi" +
        ` | STACK_AGENT_TOKEN='${TOKEN}' sh -s -- --server 'https://reg.example.test'` +
        ` --sha256 '${'cd'.repeat(32)}' --ca-fingerprint '${FINGERPRINT}'`,
    );
  });

  it('gives install.ps1 every value as a PowerShell verbatim string', () => {
    const { windows } = installCommands(values);
    expect(windows).toBe(
      "& ([scriptblock]::Create((Invoke-WebRequest -UseBasicParsing -Uri 'https://reg.example.test/install.ps1').Content))" +
        ` -Server 'https://reg.example.test' -Token '${TOKEN}' -Sha256 '${'cd'.repeat(32)}' -CaFingerprint '${FINGERPRINT}'`,
    );
  });

  it('passes AGENT_ENDPOINTS to the agent as one --agent-endpoint list, and nothing for none', () => {
    const agentEndpoints = ['orch-1.example:5263', '[2001:db8::1]:5263'];
    const { linux, windows } = installCommands({ ...values, agentEndpoints });
    const plain = installCommands(values);
    expect(linux).toBe(`${plain.linux} --agent-endpoint 'orch-1.example:5263,[2001:db8::1]:5263'`);
    expect(windows).toBe(`${plain.windows} -AgentEndpoint 'orch-1.example:5263,[2001:db8::1]:5263'`);
    expect(installCommands({ ...values, agentEndpoints: [] })).toEqual(plain);
  });

  it('quotes a hostile registry URL for each shell instead of letting it run', () => {
    const url = "https://x.test/a'$(touch /tmp/p)`b`\u2019;calc";
    const { linux, windows } = installCommands({ ...values, registryUrl: url });
    expect(linux).toContain(`--server ${quotePosix(url)}`);
    expect(windows).toContain(`-Server ${quotePowerShell(url)}`);
  });
});

// Each test runs the real script, which starts node processes: seconds each on a loaded machine.
describe('install.sh', { timeout: 30_000 }, () => {
  const scripts = new InstallScripts();
  let server: Server;
  let base: string;
  const userAgents: string[] = [];
  let served = FAKE_AGENT;
  let root: string;
  /** A PATH without node, and one with a node too old, for the refusals. */
  let noNodePath: string;
  let oldNodePath: string;
  let noCurlPath: string;
  const homes: string[] = [];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'install-sh-'));
    server = createServer((req, res) => {
      userAgents.push(req.headers['user-agent'] ?? '');
      if (req.url === '/install.sh') res.end(scripts.text('install.sh'));
      else if (req.url === '/downloads/stack-agent.mjs') res.end(served);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Every program of the system's PATH but the ones a case takes away.
    const pathWithout = (name: string, missing: string[], extra: Record<string, string> = {}) => {
      const dir = join(root, name);
      mkdirSync(dir);
      for (const from of ['/usr/local/bin', '/usr/bin', '/bin']) {
        if (!existsSync(from)) continue;
        for (const entry of readdirSync(from)) {
          if (missing.includes(entry) || existsSync(join(dir, entry))) continue;
          symlinkSync(join(from, entry), join(dir, entry));
        }
      }
      for (const [entry, text] of Object.entries(extra)) {
        writeFileSync(join(dir, entry), text);
        chmodSync(join(dir, entry), 0o755);
      }
      return dir;
    };
    noNodePath = pathWithout('no-node', ['node', 'nodejs']);
    oldNodePath = pathWithout('old-node', ['node'], {
      node: '#!/bin/sh\n[ "$1" = --version ] && echo v18.19.0\nexit 1\n',
    });
    noCurlPath = pathWithout('no-curl', ['curl']);
  });

  afterEach(() => {
    // The background agents the runs started, by their pid files.
    for (const home of homes.splice(0)) {
      const pidFile = join(home, '.local/share/stack-agent/agent.pid');
      if (existsSync(pidFile)) {
        try {
          process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    served = FAKE_AGENT;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(root, { recursive: true, force: true });
  });

  function newHome(): string {
    const home = mkdtempSync(join(root, 'home-'));
    homes.push(home);
    return home;
  }

  const env = (home: string, path = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`) => ({
    HOME: home,
    PATH: path,
  });

  /** The agent's first words as install.sh starts it from `dir`. */
  const installedArgv = (dir: string) => [
    '--server',
    base,
    '--token-file',
    `${dir}/join-token`,
    '--data-dir',
    `${dir}/data`,
    '--ca-fingerprint',
    FINGERPRINT,
  ];

  /** The linux command as the API gives it, with extra words pasted after it. */
  const linux = (extra: string[] = [], sha256 = FAKE_SHA256, agentEndpoints?: string[]) =>
    `${installCommands({ registryUrl: base, token: TOKEN, caFingerprint: FINGERPRINT, sha256, agentEndpoints }).linux} --no-systemd ${extra.map(quotePosix).join(' ')}`;

  it('is valid POSIX sh', async () => {
    const file = join(root, 'install.sh');
    writeFileSync(file, scripts.text('install.sh'));
    expect(await sh(`sh -n ${quotePosix(file)}`, { PATH: process.env.PATH ?? '' })).toMatchObject({
      code: 0,
      stderr: '',
    });
  });

  it('installs and starts the agent in the background with the values of the command', async () => {
    const home = newHome();
    const hostile = [
      '--name',
      `it's $(touch ${root}/pwned) \`touch ${root}/pwned\` \\ "q"`,
      '--label',
      'a=b c',
    ];
    const run = await sh(linux(hostile), env(home));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const dir = join(home, '.local/share/stack-agent');
    expect(run.stdout).toContain(`running in the background`);
    expect(run.stdout).toContain(`log:  ${dir}/agent.log`);
    expect(run.stdout + run.stderr).not.toContain(TOKEN);
    const started = JSON.parse(readFileSync(join(dir, 'started.json'), 'utf8')) as {
      argv: string[];
      token: string | null;
    };
    expect(started).toEqual({
      argv: [...installedArgv(dir), ...hostile],
      // Only in the file: the agent refuses a token given two ways.
      token: null,
    });
    expect(readFileSync(join(dir, 'join-token'), 'utf8')).toBe(`${TOKEN}\n`);
    expect(statSync(join(dir, 'join-token')).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o077).toBe(0);
    expect(readFileSync(join(dir, 'stack-agent.mjs'), 'utf8')).toBe(FAKE_AGENT);
    expect(existsSync(join(root, 'pwned'))).toBe(false);
    const pid = Number(readFileSync(join(dir, 'agent.pid'), 'utf8'));
    expect(running(pid)).toBe(true);
    expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toContain(`${dir}/stack-agent.mjs`);
  });

  it('hands the agent endpoints of the command to the agent, before the words pasted after it', async () => {
    const home = newHome();
    const run = await sh(
      linux(['--name', 'n1'], FAKE_SHA256, ['a.example:5263', 'b.example:5263']),
      env(home),
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const dir = join(home, '.local/share/stack-agent');
    const started = JSON.parse(readFileSync(join(dir, 'started.json'), 'utf8')) as { argv: string[] };
    expect(started.argv).toEqual([
      ...installedArgv(dir),
      '--agent-endpoint',
      'a.example:5263,b.example:5263',
      '--name',
      'n1',
    ]);
  });

  it('stops the agent it started before when it runs again', async () => {
    const home = newHome();
    expect((await sh(linux(), env(home))).code).toBe(0);
    const pidFile = join(home, '.local/share/stack-agent/agent.pid');
    const first = Number(readFileSync(pidFile, 'utf8'));
    const again = await sh(linux(), env(home));
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`stopping the running agent (pid ${first})`);
    expect(Number(readFileSync(pidFile, 'utf8'))).not.toBe(first);
    expect(running(first)).toBe(false);
  });

  it('downloads with wget where there is no curl', async () => {
    userAgents.length = 0;
    const run = await sh(linux(), env(newHome(), noCurlPath));
    expect(run.code).toBe(0);
    expect(userAgents).toHaveLength(2);
    expect(userAgents.every((ua) => /wget/i.test(ua))).toBe(true);
  });

  it('installs nothing when the download is not the file the command names', async () => {
    served = `${FAKE_AGENT}// tampered\n`;
    const home = newHome();
    const run = await sh(linux(), env(home));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `is ${createHash('sha256').update(served).digest('hex')}, not ${FAKE_SHA256}: nothing was installed`,
    );
    const dir = join(home, '.local/share/stack-agent');
    expect(existsSync(join(dir, 'stack-agent.mjs'))).toBe(false);
    expect(existsSync(join(dir, 'stack-agent.mjs.new'))).toBe(false);
    expect(existsSync(join(dir, 'join-token'))).toBe(false);
  });

  it('says Node.js 20 is needed when there is none or an older one', async () => {
    const none = await sh(linux(), env(newHome(), noNodePath));
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('Node.js 20 or newer is needed on the PATH');
    const old = await sh(linux(), env(newHome(), oldNodePath));
    expect(old.code).toBe(1);
    expect(old.stderr).toContain('Node.js 20 or newer is needed;');
    expect(old.stderr).toContain('is v18.19.0');
  });

  it.each([
    ['no server', ['--sha256', FAKE_SHA256], '--server URL is required'],
    [
      'a server that is not http(s)',
      ['--server', 'file:///etc', '--sha256', FAKE_SHA256],
      'must be an http:// or https:// URL',
    ],
    ['an option without its value', ['--server'], '--server needs a value'],
    [
      'a checksum that is not one',
      ['--server', 'http://127.0.0.1:9', '--sha256', 'x'.repeat(64)],
      '--sha256 wants',
    ],
    ['a short checksum', ['--server', 'http://127.0.0.1:9', '--sha256', 'ab'], '--sha256 wants'],
  ])('refuses %s before downloading anything', async (_case, args, message) => {
    const file = join(root, 'install.sh');
    writeFileSync(file, scripts.text('install.sh'));
    const home = newHome();
    const run = await sh(
      `STACK_AGENT_TOKEN=${TOKEN} sh ${quotePosix(file)} ${args.map(quotePosix).join(' ')}`,
      env(home),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(message);
    expect(existsSync(join(home, '.local'))).toBe(false);
  });

  it('refuses to run without the join token in its environment', async () => {
    const file = join(root, 'install.sh');
    writeFileSync(file, scripts.text('install.sh'));
    const run = await sh(`sh ${quotePosix(file)} --server ${base} --sha256 ${FAKE_SHA256}`, env(newHome()));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('STACK_AGENT_TOKEN');
  });

  it('runs nothing when the download is cut short', async () => {
    const text = scripts.text('install.sh');
    const file = join(root, 'cut.sh');
    writeFileSync(file, text.slice(0, text.lastIndexOf('main "$@"')));
    const home = newHome();
    const run = await sh(
      `STACK_AGENT_TOKEN=${TOKEN} sh ${quotePosix(file)} --server ${base} --sha256 ${FAKE_SHA256}`,
      env(home),
    );
    expect(run).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(existsSync(join(home, '.local'))).toBe(false);
  });
});
