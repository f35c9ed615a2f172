import { readFile } from 'node:fs/promises';
import { connect as netConnect, type Socket } from 'node:net';
import ssh2, { type ClientChannel, type TcpConnectionDetails } from 'ssh2';

// ssh2 is CommonJS: Node's ESM loader finds no named exports in it, only the default.
const { Client, utils } = ssh2;
import {
  abortedError,
  silentLogger,
  TunnelConfigError,
  TunnelConnectError,
  type TunnelClosed,
  type TunnelConnection,
  type TunnelLogger,
  type TunnelProvider,
} from './tunnel-provider.js';
import { fsReason, hostPort, isPort, seconds } from './provider-settings.js';
import {
  checkSshSettings,
  fingerprintFromHex,
  validSshSettings,
  type SshTunnelSettings,
  type ValidSshSettings,
} from './ssh-settings.js';

export interface SshProviderOptions {
  settings: SshTunnelSettings;
  /** This instance's HTTP port, which TUNNEL_SSH_REMOTE_PORT forwards to. */
  localHttpPort: number;
  /** This instance's agent (gRPC) port, which TUNNEL_SSH_AGENT_REMOTE_PORT forwards to. */
  localAgentPort: number;
  /** Where the forwarded connections are delivered; default 127.0.0.1 (the service listens there too). */
  localHost?: string;
  /**
   * The address the relay binds the forwarded ports to. Default '' (every address): sshd then decides
   * by its GatewayPorts (`yes` or `clientspecified`: all interfaces; `no`: loopback only, for a relay
   * whose reverse proxy is the only way in, which then cannot carry the agent port).
   */
  remoteBindAddress?: string;
  /** The host named in agentEndpoint; default TUNNEL_SSH_HOST (agents reach the relay by that name). */
  agentPublicHost?: string;
  /** A dead relay is noticed after about interval × (countMax + 1); default 5 s × 3. */
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** Upper bound for one attempt: TCP, SSH handshake, login and both forwards; default 20 s. */
  readyTimeoutMs?: number;
  logger?: TunnelLogger;
}

/** A reverse SSH tunnel: the relay listens on two ports and hands each connection down the SSH link. */
export class SshTunnelProvider implements TunnelProvider {
  readonly name = 'ssh' as const;

  constructor(private readonly options: SshProviderOptions) {}

  checkConfig(): string[] {
    const problems = checkSshSettings(this.options.settings);
    for (const [name, port] of [
      ['local HTTP port', this.options.localHttpPort],
      ['local agent port', this.options.localAgentPort],
    ] as const) {
      if (!isPort(port)) problems.push(`The ${name} ${port} is not a port.`);
    }
    return problems;
  }

  async connect(signal: AbortSignal): Promise<SshTunnelConnection> {
    const problems = this.checkConfig();
    const settings = validSshSettings(this.options.settings);
    if (problems.length > 0 || !settings) throw new TunnelConfigError(problems);
    if (signal.aborted) throw abortedError();
    const privateKey = await readPrivateKey(settings.keyFile, signal);
    const connection = new SshTunnelConnection(settings, this.options);
    await connection.establish(signal, privateKey);
    return connection;
  }
}

async function readPrivateKey(keyFile: string, signal: AbortSignal): Promise<Buffer> {
  let key: Buffer;
  try {
    key = await readFile(keyFile, { signal });
  } catch (err) {
    if (signal.aborted) throw abortedError();
    throw new TunnelConnectError(`TUNNEL_SSH_KEY_FILE ${keyFile} cannot be read (${fsReason(err)}).`);
  }
  // ssh2's parse errors name the format problem ("Unsupported key format"), never the key's content.
  const parsed = utils.parseKey(key);
  const error = parsed instanceof Error ? parsed : undefined;
  if (error || (Array.isArray(parsed) && parsed.length === 0)) {
    throw new TunnelConnectError(
      `TUNNEL_SSH_KEY_FILE ${keyFile} is not a usable OpenSSH private key without a passphrase` +
        (error ? ` (${error.message}).` : '.'),
    );
  }
  return key;
}

export class SshTunnelConnection implements TunnelConnection {
  readonly publicUrl: string;
  readonly agentEndpoint: string;
  readonly closed: Promise<TunnelClosed>;
  private settle!: (closed: TunnelClosed) => void;
  private readonly client = new Client();
  private readonly relay: string;
  /** Remote port → local port. */
  private readonly targets: Map<number, number>;
  private readonly sockets = new Set<Socket>();
  private readonly log: TunnelLogger;
  private readonly bindAddress: string;
  private readonly keepaliveMs: number;
  private readonly keepaliveCountMax: number;
  private readonly readyTimeoutMs: number;
  private presentedHostKey: string | undefined;
  private lastError: string | undefined;
  private ready = false;
  private closing = false;

  constructor(
    private readonly settings: ValidSshSettings,
    options: SshProviderOptions,
  ) {
    this.relay = hostPort(settings.host, settings.port);
    this.publicUrl = settings.publicUrl;
    this.agentEndpoint = hostPort(options.agentPublicHost ?? settings.host, settings.agentRemotePort);
    this.targets = new Map([
      [settings.remotePort, options.localHttpPort],
      [settings.agentRemotePort, options.localAgentPort],
    ]);
    this.log = options.logger ?? silentLogger;
    this.bindAddress = options.remoteBindAddress ?? '';
    this.keepaliveMs = options.keepaliveIntervalMs ?? 5000;
    this.keepaliveCountMax = options.keepaliveCountMax ?? 2;
    this.readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
    this.closed = new Promise((resolve) => (this.settle = resolve));
    const localHost = options.localHost ?? '127.0.0.1';
    this.client.on('tcp connection', (info, accept, reject) => this.forward(info, accept, reject, localHost));
    this.client.on('error', (err) => (this.lastError ??= this.describe(err)));
    this.client.on('close', () => {
      for (const socket of this.sockets) socket.destroy();
      if (this.closing) return this.settle({});
      const error = this.lastError ?? `the relay ${this.relay} closed the SSH connection`;
      if (this.ready) this.log.warn({ relay: this.relay, reason: error }, 'ssh tunnel dropped');
      this.settle({ error });
    });
  }

  /** Connections being carried right now (each is one TCP connection through the relay). */
  get activeStreams(): number {
    return this.sockets.size;
  }

  /** Connects, logs in and asks the relay for both forwards; on failure everything is released. */
  async establish(signal: AbortSignal, privateKey: Buffer): Promise<void> {
    if (signal.aborted) throw abortedError();
    const deadline = setTimeout(
      () => this.fail(`no tunnel within ${seconds(this.readyTimeoutMs)}`),
      this.readyTimeoutMs,
    );
    const onAbort = () => this.fail(abortedError().message);
    signal.addEventListener('abort', onAbort);
    try {
      await new Promise<void>((resolve, reject) => {
        const failed = () =>
          reject(new TunnelConnectError(this.lastError ?? `the relay ${this.relay} hung up`));
        void this.closed.then(failed);
        this.client.once('ready', () => {
          this.forwardBoth().then(resolve, reject);
        });
        this.client.connect({
          host: this.settings.host,
          port: this.settings.port,
          username: this.settings.user,
          privateKey,
          hostHash: 'sha256',
          hostVerifier: (hex: string) => {
            this.presentedHostKey = fingerprintFromHex(hex);
            return this.presentedHostKey === this.settings.hostKey;
          },
          keepaliveInterval: this.keepaliveMs,
          keepaliveCountMax: this.keepaliveCountMax,
          readyTimeout: this.readyTimeoutMs,
        });
      });
    } catch (err) {
      this.fail((err as Error).message);
      await Promise.race([this.closed, new Promise((resolve) => setTimeout(resolve, 3000).unref())]);
      throw err instanceof TunnelConnectError ? err : new TunnelConnectError((err as Error).message);
    } finally {
      clearTimeout(deadline);
      signal.removeEventListener('abort', onAbort);
    }
    this.ready = true;
    this.log.log(
      {
        relay: this.relay,
        remote_port: this.settings.remotePort,
        agent_remote_port: this.settings.agentRemotePort,
      },
      'ssh tunnel connected',
    );
  }

  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      // Unbinding first makes the relay's ports refuse new connections before close() returns.
      await Promise.all([...this.targets.keys()].map((port) => this.unforward(port)));
      for (const socket of this.sockets) socket.destroy();
      this.client.end();
      setTimeout(() => this.client.destroy(), 3000).unref();
    }
    await this.closed;
  }

  /** Ends a connection that never became ready, keeping the first reason. */
  private fail(reason: string): void {
    this.lastError ??= reason;
    this.client.destroy();
  }

  private async forwardBoth(): Promise<void> {
    for (const port of this.targets.keys()) {
      await new Promise<void>((resolve, reject) =>
        this.client.forwardIn(this.bindAddress, port, (err) => {
          if (!err) return resolve();
          // The link went down while waiting: its reason, not the forward's, is the one to report.
          if (err.message === 'No response from server') {
            return reject(new TunnelConnectError(this.lastError ?? `the relay ${this.relay} hung up`));
          }
          const where = `${this.bindAddress === '' ? 'every address' : this.bindAddress} port ${port}`;
          reject(
            new TunnelConnectError(
              `the relay ${this.relay} refused to listen on ${where} ` +
                '(the port is in use, or its sshd forbids it: AllowTcpForwarding, PermitListen)',
            ),
          );
        }),
      );
    }
  }

  private unforward(port: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2000);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      try {
        this.client.unforwardIn(this.bindAddress, port, done);
      } catch {
        done(); // Not connected any more: nothing is bound.
      }
    });
  }

  private forward(
    info: TcpConnectionDetails,
    accept: () => ClientChannel,
    reject: () => void,
    localHost: string,
  ): void {
    const localPort = this.targets.get(info.destPort);
    if (localPort === undefined || this.closing) return reject();
    const remote = accept();
    const local = netConnect(localPort, localHost);
    this.sockets.add(local);
    let ended = false;
    const end = (err?: Error) => {
      if (ended) return;
      ended = true;
      this.sockets.delete(local);
      remote.destroy();
      local.destroy();
      if (err) this.log.debug({ local_port: localPort, err: err.message }, 'tunnel stream failed');
    };
    remote.on('error', end).on('close', () => end());
    local.on('error', end).on('close', () => end());
    remote.pipe(local).pipe(remote);
  }

  /** ssh2's errors in words an operator can act on. */
  private describe(err: Error & { level?: string; code?: string }): string {
    const expected = this.settings.hostKey;
    if (err.message.includes('Host denied')) {
      return (
        `the relay ${this.relay} presented host key ${this.presentedHostKey ?? 'of an unknown kind'}, ` +
        `not TUNNEL_SSH_HOST_KEY ${expected}: refusing to connect (another server, or the relay's key changed)`
      );
    }
    if (err.level === 'client-authentication') {
      return `the relay ${this.relay} refused the key in TUNNEL_SSH_KEY_FILE for user ${this.settings.user}`;
    }
    if (err.message === 'Keepalive timeout') {
      const silence = this.keepaliveMs * (this.keepaliveCountMax + 1);
      return `the relay ${this.relay} stopped answering (no keepalive reply for ${seconds(silence)})`;
    }
    if (err.message.includes('Timed out while waiting for handshake')) {
      return `the relay ${this.relay} did not complete the SSH handshake within ${seconds(this.readyTimeoutMs)}`;
    }
    switch (err.code ?? '') {
      case 'ECONNREFUSED':
        return `cannot reach the relay ${this.relay}: connection refused`;
      case 'ECONNRESET':
        return `the relay ${this.relay} reset the connection`;
      case 'ENOTFOUND':
      case 'EAI_AGAIN':
        return `cannot resolve the relay host ${this.settings.host}`;
      case 'ETIMEDOUT':
      case 'EHOSTUNREACH':
      case 'ENETUNREACH':
        return `cannot reach the relay ${this.relay}: ${err.code}`;
      default:
        return `SSH connection to the relay ${this.relay} failed: ${err.message}`;
    }
  }
}
