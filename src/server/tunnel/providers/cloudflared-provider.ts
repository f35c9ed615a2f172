import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseCloudflaredLine, type CloudflaredEvent } from './cloudflared-output.js';
import { isPort, publicUrlProblem, seconds } from './provider-settings.js';
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

export interface CloudflaredProviderOptions {
  /** This instance's HTTP port, which the tunnel serves. */
  localHttpPort: number;
  localHost?: string;
  /** TUNNEL_CLOUDFLARED_TOKEN: runs that named tunnel; without it, a quick tunnel on trycloudflare.com. */
  token?: string;
  /** TUNNEL_PUBLIC_URL: a named tunnel's hostname (configured at Cloudflare; cloudflared never prints it). */
  publicUrl?: string;
  /** The program, by name on the search path or by path; default `cloudflared`. */
  binary?: string;
  /** Where a bare binary name is looked up; default PATH of `parentEnv`. */
  searchPath?: string;
  /**
   * The environment the service was started with, as its config read it (only src/server/config reads
   * the environment): PATH and the few variables cloudflared inherits come from here.
   */
  parentEnv: Readonly<Record<string, string | undefined>>;
  /** Upper bound for the URL and the first registered connection; default 30 s. */
  readyTimeoutMs?: number;
  /** How long cloudflared may go without any edge connection before the tunnel counts as down; 20 s. */
  reconnectGraceMs?: number;
  /** SIGTERM lets cloudflared finish requests in flight; after this it gets SIGKILL; default 10 s. */
  stopTimeoutMs?: number;
  logger?: TunnelLogger;
}

// cloudflared reads many TUNNEL_* variables as flags, and this process holds secrets (the database
// URL, the bootstrap secret, TUNNEL_CLOUDFLARED_TOKEN itself): the child gets only these.
const INHERITED = [
  'PATH',
  'HOME',
  'USER',
  'LANG',
  'LC_ALL',
  'TZ',
  'TMPDIR',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTPS_PROXY',
  'https_proxy',
  'HTTP_PROXY',
  'http_proxy',
  'NO_PROXY',
  'no_proxy',
];

/** The environment cloudflared runs with: the inherited basics and, for a named tunnel, TUNNEL_TOKEN. */
export function cloudflaredEnvironment(
  parent: Readonly<Record<string, string | undefined>>,
  token?: string,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of INHERITED) if (parent[name] !== undefined) env[name] = parent[name];
  // In the environment, not in argv, so it does not show in `ps` or /proc/<pid>/cmdline.
  if (token) env.TUNNEL_TOKEN = token;
  return env;
}

/** The program's path: `binary` itself when it names a path, else the first match on `searchPath`. */
export function findExecutable(binary: string, searchPath: string): string | undefined {
  const candidates = binary.includes('/')
    ? [binary]
    : searchPath
        .split(delimiter)
        .filter((dir) => isAbsolute(dir))
        .map((dir) => join(dir, binary));
  return candidates.find((file) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  });
}

/** A tunnel through Cloudflare run by the cloudflared program, one process per connection. */
export class CloudflaredTunnelProvider implements TunnelProvider {
  readonly name = 'cloudflared' as const;

  constructor(private readonly options: CloudflaredProviderOptions) {}

  private get binary(): string {
    return this.options.binary ?? 'cloudflared';
  }

  checkConfig(): string[] {
    const problems: string[] = [];
    if (!findExecutable(this.binary, this.options.searchPath ?? this.options.parentEnv.PATH ?? '')) {
      problems.push(
        this.binary.includes('/')
          ? `The cloudflared program ${this.binary} does not exist or is not executable.`
          : `The cloudflared program is not on PATH: install cloudflared, or use TUNNEL_PROVIDER=ssh.`,
      );
    }
    const token = this.options.token;
    if (token !== undefined && (token.trim() === '' || /\s/.test(token.trim()))) {
      problems.push('TUNNEL_CLOUDFLARED_TOKEN must be the tunnel token Cloudflare shows, in one piece.');
    }
    if (token !== undefined) {
      const problem = publicUrlProblem(
        this.options.publicUrl,
        "the named tunnel's public hostname, which cloudflared does not print",
      );
      if (problem) problems.push(problem);
    }
    if (!isPort(this.options.localHttpPort))
      problems.push(`The local HTTP port ${this.options.localHttpPort} is not a port.`);
    return problems;
  }

  async connect(signal: AbortSignal): Promise<CloudflaredConnection> {
    const problems = this.checkConfig();
    const path = findExecutable(this.binary, this.options.searchPath ?? this.options.parentEnv.PATH ?? '');
    if (problems.length > 0 || !path) throw new TunnelConfigError(problems);
    if (signal.aborted) throw abortedError();
    const token = this.options.token?.trim();
    const origin = `http://${this.options.localHost ?? '127.0.0.1'}:${this.options.localHttpPort}`;
    const args = token
      ? ['tunnel', '--no-autoupdate', 'run']
      : ['tunnel', '--no-autoupdate', '--url', origin];
    let child: ChildProcess;
    try {
      child = spawn(path, args, {
        env: cloudflaredEnvironment(this.options.parentEnv, token),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      throw new TunnelConnectError(`cloudflared could not be started (${(err as Error).message})`);
    }
    const connection = new CloudflaredConnection(child, { ...this.options, token });
    await connection.ready(signal);
    return connection;
  }
}

export class CloudflaredConnection implements TunnelConnection {
  /** Cloudflare delivers HTTP to the origin; the raw mTLS gRPC port would need `cloudflared access tcp` beside every agent. */
  readonly agentEndpoint = null;
  readonly closed: Promise<TunnelClosed>;
  private settle!: (closed: TunnelClosed) => void;
  private url: string | null;
  private readonly quick: boolean;
  private readonly connections = new Set<number>();
  private readonly exited: Promise<void>;
  private readonly log: TunnelLogger;
  private lastError: string | undefined;
  private exitReason: string | undefined;
  /** Set when the provider gave up on a cloudflared that lost its edge connections. */
  private dropReason: string | undefined;
  private isReady = false;
  private closing = false;
  private graceTimer: NodeJS.Timeout | undefined;
  private onChange: () => void = () => undefined;

  constructor(
    private readonly child: ChildProcess,
    private readonly options: CloudflaredProviderOptions,
  ) {
    this.quick = !options.token;
    this.url = this.quick ? null : (options.publicUrl ?? null);
    this.log = options.logger ?? silentLogger;
    this.closed = new Promise((resolve) => (this.settle = resolve));
    this.exited = new Promise((resolve) => {
      // 'close' rather than 'exit': by then every line cloudflared wrote has been read.
      child.once('close', (code, sig) => {
        this.exitReason ??= `cloudflared exited (${sig ? `signal ${sig}` : `code ${code}`})`;
        resolve();
        this.ended();
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        if (child.pid !== undefined) return; // A failed kill(); the process still runs.
        this.exitReason = `cloudflared could not be started (${err.code ?? err.message})`;
        resolve();
        this.ended();
      });
    });
    for (const stream of [child.stdout, child.stderr]) {
      if (stream)
        createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => this.read(line));
    }
  }

  get publicUrl(): string | null {
    return this.url;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Resolves once the tunnel has its URL and a registered edge connection. */
  async ready(signal: AbortSignal): Promise<void> {
    const timeoutMs = this.options.readyTimeoutMs ?? 30_000;
    let failure: string | undefined;
    await new Promise<void>((resolve) => {
      const finish = (why?: string) => {
        failure ??= why;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.onChange = () => undefined;
        resolve();
      };
      const timer = setTimeout(
        () =>
          finish(
            this.quick && !this.url
              ? `cloudflared printed no quick tunnel URL within ${seconds(timeoutMs)}`
              : `cloudflared registered no connection to Cloudflare within ${seconds(timeoutMs)}`,
          ),
        timeoutMs,
      );
      const onAbort = () => finish(abortedError().message);
      signal.addEventListener('abort', onAbort);
      this.onChange = () => {
        if (this.exitReason) finish(`${this.exitReason} before the tunnel was up${this.because()}`);
        else if (this.connections.size > 0 && (!this.quick || this.url)) {
          // Set here, not after the await: a drop read in the same chunk must already start the grace.
          this.isReady = true;
          finish();
        }
      };
      this.onChange();
    });
    if (failure) {
      await this.stop();
      throw new TunnelConnectError(failure);
    }
    this.log.log({ public_url: this.url, quick: this.quick }, 'cloudflared tunnel connected');
  }

  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = true;
      clearTimeout(this.graceTimer);
      await this.stop();
    }
    await this.closed;
  }

  private because(): string {
    return this.lastError ? `: ${this.lastError}` : '';
  }

  private read(line: string): void {
    // Never repeat the token, whatever cloudflared prints.
    const token = this.options.token;
    const safe = token ? line.split(token).join('[redacted]') : line;
    this.log.debug({ line: safe }, 'cloudflared');
    const event = parseCloudflaredLine(safe);
    if (event) this.apply(event);
  }

  private apply(event: CloudflaredEvent): void {
    switch (event.kind) {
      case 'url':
        if (this.quick && !this.url) this.url = event.url;
        break;
      case 'registered':
        this.connections.add(event.connIndex);
        clearTimeout(this.graceTimer);
        this.graceTimer = undefined;
        break;
      case 'lost':
        this.connections.delete(event.connIndex);
        if (event.error) this.lastError = event.error;
        if (this.connections.size === 0 && this.isReady && !this.closing) this.startGrace();
        break;
      case 'error':
        this.lastError = event.message;
        break;
    }
    this.onChange();
  }

  /** cloudflared reconnects by itself (a quick tunnel keeps its URL only that way): give it a moment. */
  private startGrace(): void {
    if (this.graceTimer) return;
    const graceMs = this.options.reconnectGraceMs ?? 20_000;
    this.graceTimer = setTimeout(() => {
      this.dropReason =
        `cloudflared lost every connection to Cloudflare and did not reconnect within ${seconds(graceMs)}` +
        this.because();
      this.log.warn({ reason: this.dropReason }, 'cloudflared tunnel dropped');
      this.closing = true;
      void this.stop(); // ended() settles once the process is gone.
    }, graceMs);
  }

  /** The process is gone: a connection that was up is closed now, with the reason. */
  private ended(): void {
    clearTimeout(this.graceTimer);
    this.onChange();
    if (this.dropReason) return this.settle({ error: this.dropReason });
    if (this.closing) return this.settle({});
    const error = `${this.exitReason ?? 'cloudflared exited'}${this.because()}`;
    if (this.isReady) this.log.warn({ reason: error }, 'cloudflared tunnel dropped');
    this.settle({ error });
  }

  /** SIGTERM, then SIGKILL after stopTimeoutMs; resolves once the process is gone. */
  private async stop(): Promise<void> {
    if (this.exitReason) return;
    this.child.kill('SIGTERM');
    const timeoutMs = this.options.stopTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        resolve();
      }, timeoutMs);
    });
    await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    await this.exited;
  }
}
