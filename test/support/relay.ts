import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

const SSHD = '/usr/sbin/sshd';

/** A real OpenSSH server on loopback, standing in for the operator's relay host. */
export interface Relay {
  host: string;
  port: number;
  user: string;
  /** The client's OpenSSH private key (its public half is the only authorized key). */
  keyFile: string;
  /** The host key's fingerprint as `ssh-keygen -lf` prints it: `SHA256:<base64 without padding>`. */
  hostKeyFingerprint: string;
  /** A key pair the relay does not know: its private key, and its fingerprint (not the host key's). */
  otherKeyFile: string;
  otherFingerprint: string;
  /** The TUNNEL_SSH_* settings that reach this relay (host, port, user, key file, host key). */
  settings: { host: string; port: number; user: string; keyFile: string; hostKey: string };
  /** sshd's own log (stderr, `LogLevel VERBOSE`) since the relay was created. */
  log(): string;
  /** Kills the listener and every session process, so established tunnels really drop. */
  stop(): Promise<void>;
  /** Starts sshd again on the same port with the same keys. */
  start(): Promise<void>;
  /** SIGSTOP to the listener and the sessions: the TCP connections stay open but nothing answers. */
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export interface RelayOptions {
  /** sshd's GatewayPorts: `clientspecified` (default) honours the bind address the client asks for. */
  gatewayPorts?: 'clientspecified' | 'yes' | 'no';
  /** sshd's PermitListen: which ports a client may have the relay listen on; default `any`. */
  permitListen?: string;
}

/** A service's ssh tunnel to `relay`: its TUNNEL_* variables, on two free loopback ports of the relay. */
export interface RelayTunnel {
  env: Record<string, string>;
  /** TUNNEL_PUBLIC_URL: the relay's port for the HTTP port. */
  publicUrl: string;
  /** The status' agent_endpoint: the relay's port for the agent port. */
  agentEndpoint: string;
}

export async function relayTunnel(relay: Relay): Promise<RelayTunnel> {
  const remotePort = await freePort();
  const agentRemotePort = await freePort();
  const publicUrl = `http://127.0.0.1:${remotePort}`;
  return {
    publicUrl,
    agentEndpoint: `${relay.host}:${agentRemotePort}`,
    env: {
      TUNNEL_SSH_HOST: relay.host,
      TUNNEL_SSH_PORT: String(relay.port),
      TUNNEL_SSH_USER: relay.user,
      TUNNEL_SSH_KEY_FILE: relay.keyFile,
      TUNNEL_SSH_HOST_KEY: relay.hostKeyFingerprint,
      TUNNEL_SSH_REMOTE_PORT: String(remotePort),
      TUNNEL_SSH_AGENT_REMOTE_PORT: String(agentRemotePort),
      TUNNEL_SSH_BIND_ADDRESS: '127.0.0.1',
      TUNNEL_PUBLIC_URL: publicUrl,
    },
  };
}

function keygen(file: string, comment: string): string {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file], { stdio: 'pipe' });
  // "256 SHA256:abc... comment (ED25519)"
  const printed = execFileSync('ssh-keygen', ['-lf', `${file}.pub`], { encoding: 'utf8' });
  const fingerprint = printed.split(' ')[1];
  if (!fingerprint?.startsWith('SHA256:')) throw new Error(`unexpected ssh-keygen -lf output: ${printed}`);
  return fingerprint;
}

/** Every process whose parent chain leads to `root` (from /proc: sshd forks one chain per session). */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name is in parentheses and may contain spaces: fields restart after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(entry), Number(fields[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  let frontier = [root];
  while (frontier.length > 0) {
    const children = [...parents].filter(([, ppid]) => frontier.includes(ppid)).map(([pid]) => pid);
    found.push(...children);
    frontier = children;
  }
  return found;
}

function signal(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // Already gone.
    }
  }
}

/** Resolves once the port answers with an SSH identification line. */
async function waitForBanner(port: number, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const why = exited();
    if (why !== undefined) throw new Error(`sshd exited before it listened: ${why}`);
    const banner = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      let data = '';
      socket.setTimeout(1000, () => socket.destroy());
      socket.on('data', (chunk) => {
        data += chunk.toString('latin1');
        if (data.includes('\n')) socket.destroy();
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(data.startsWith('SSH-2.0-')));
    });
    if (banner) return;
    if (Date.now() > deadline) throw new Error(`sshd on 127.0.0.1:${port} did not answer within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Starts sshd on a free loopback port with a host key, a client key pair and an authorized_keys file
 * of its own in a temporary directory. Remote forwarding is allowed, nothing else the tunnel does not
 * need (no passwords, no PAM, only the current user).
 */
export async function startRelay(options: RelayOptions = {}): Promise<Relay> {
  const dir = mkdtempSync(join(tmpdir(), 'so-relay-'));
  const hostKey = join(dir, 'host_ed25519');
  const keyFile = join(dir, 'client_ed25519');
  const hostKeyFingerprint = keygen(hostKey, 'relay-host');
  keygen(keyFile, 'tunnel-client');
  const otherKeyFile = join(dir, 'other_ed25519');
  const otherFingerprint = keygen(otherKeyFile, 'not-the-relay');
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(`${keyFile}.pub`), { mode: 0o600 });
  const user = userInfo().username;
  const port = await freePort();
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'StrictModes no',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'PermitRootLogin prohibit-password',
      `AllowUsers ${user}`,
      'AllowTcpForwarding remote',
      `GatewayPorts ${options.gatewayPorts ?? 'clientspecified'}`,
      `PermitListen ${options.permitListen ?? 'any'}`,
      'X11Forwarding no',
      'PrintMotd no',
      'LoginGraceTime 10',
      'LogLevel VERBOSE',
      '',
    ].join('\n'),
  );
  // The privilege separation directory; Debian creates it only when its service starts.
  try {
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  } catch {
    // Not root: sshd then runs without a chroot of its own and needs no such directory.
  }

  let output = '';
  let child: ChildProcess | undefined;
  let exitReason: string | undefined;

  const start = async (): Promise<void> => {
    exitReason = undefined;
    // -D: stay in the foreground (the child is the listener), -e: log to stderr.
    const proc = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    proc.on('exit', (code, sig) => {
      if (child === proc) exitReason = `code ${code ?? '-'}, signal ${sig ?? '-'}: ${output.slice(-2000)}`;
    });
    await waitForBanner(port, () => exitReason);
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    // The listener's death alone leaves each session's processes (and their forwarded ports) alive.
    // Sessions go first, so the still-running listener reaps them instead of leaving zombies.
    const listener = proc.pid ?? 0;
    const sessions = descendants(listener);
    signal([listener, ...sessions], 'SIGCONT');
    signal(sessions, 'SIGKILL');
    const deadline = Date.now() + 2000;
    while (descendants(listener).length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    signal([listener], 'SIGKILL');
    await exited;
  };

  const tree = (): number[] =>
    child?.pid === undefined || child.exitCode !== null ? [] : [child.pid, ...descendants(child.pid)];

  await start();
  return {
    host: '127.0.0.1',
    port,
    user,
    keyFile,
    hostKeyFingerprint,
    otherKeyFile,
    otherFingerprint,
    settings: { host: '127.0.0.1', port, user, keyFile, hostKey: hostKeyFingerprint },
    log: () => output,
    stop,
    start,
    pause: () => signal(tree(), 'SIGSTOP'),
    resume: () => signal(tree(), 'SIGCONT'),
    close: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
