import { spawn, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from 'pino';
import type { OutputStream } from '../../contracts/agent-protocol/index.js';
import { PRIVATE_FILE_MODE } from '../../contracts/private-files.js';
import type {
  ContainerOptions,
  Driver,
  EnsureAction,
  ExecResult,
  ObservedService,
  ServiceSpec,
  ServiceStatus,
  StackRef,
  StepContext,
} from './driver.js';
import { volumeKey } from './driver.js';

/** How long a stopping service gets between SIGTERM and SIGKILL. */
const STOP_GRACE_MS = 5000;
const MIN_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;
/** A service that ran this long before exiting restarts after the shortest delay again. */
const STABLE_RUN_MS = 10_000;
/** Output file size before it is rotated to `.1`. */
const MAX_OUTPUT_BYTES = 10 * 1024 * 1024;
const TAIL_LINES = 200;
/** What `exec` keeps of a command's output: the end, which says why it failed. */
const MAX_EXEC_OUTPUT_CHARS = 4096;
/** A line longer than this is cut into pieces of this length (as it is read). */
const MAX_LINE_CHARS = 4096;

/** Receives each line a service writes, without its line end. */
export type OutputSink = (stackId: string, service: string, stream: OutputStream, line: string) => void;

/** One output pipe of the running process: a line begun in one chunk ends in a later one. */
interface Pipe {
  decoder: StringDecoder;
  partial: string;
}

interface Supervised {
  stack: StackRef;
  spec: ServiceSpec;
  child: ChildProcess | null;
  status: 'starting' | 'running' | 'restarting' | 'exited';
  startedAt: Date | null;
  restarts: number;
  exitCode: number | null;
  delayMs: number;
  restartTimer: NodeJS.Timeout | undefined;
  /** Set while we stop it on purpose, so the exit does not trigger the restart policy. */
  stopping: boolean;
  tail: string[];
  pipes: Record<'stdout' | 'stderr', Pipe>;
  logFile: string;
  pidFile: string;
}

const key = (stackId: string, name: string) => `${stackId}/${name}`;

/** A volume name that is one directory name (Compose's `[a-zA-Z0-9][a-zA-Z0-9_.-]*`). */
const VOLUME_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** `STACK_VOLUME_<NAME>`: the volume's name upper-cased, every character outside A-Z0-9 as `_`. */
export function volumeEnvName(volume: string): string {
  return `STACK_VOLUME_${volume.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** The container options a process cannot honour that `c` sets (uncapped is ignored: limits stay). */
function containerOptionsSet(c: ContainerOptions): string[] {
  const set: string[] = [];
  if (c.entrypoint_set) set.push('entrypoint');
  if (c.user) set.push('user');
  if (c.working_dir) set.push('working_dir');
  if (c.hostname) set.push('hostname');
  if (Object.keys(c.labels ?? {}).length > 0) set.push('labels');
  if (c.aliases?.length) set.push('aliases');
  if (c.extra_hosts?.length) set.push('extra_hosts');
  if (c.stop_signal) set.push('stop_signal');
  if (c.stop_grace_period_ms) set.push('stop_grace_period');
  if (c.init) set.push('init');
  if (c.read_only) set.push('read_only');
  if (c.shm_size_bytes) set.push('shm_size');
  if (c.ulimits?.length) set.push('ulimits');
  if (c.expose?.length) set.push('expose');
  if (c.memory_reservation_bytes) set.push('memory_reservation');
  if (c.restart_max_retries) set.push('restart_max_retries');
  return set;
}

/**
 * Runs services as child processes of the agent: the argument list without a shell, the service's
 * environment plus the agent's PATH (nothing else of the agent's environment), in its own process
 * group so a stop reaches its children too. Supervises them under their restart policy with
 * exponential backoff, and keeps their output (a tail in memory, a rotated file on disk).
 */
export class ProcessDriver implements Driver<Supervised> {
  readonly name = 'process' as const;
  private readonly services = new Map<string, Supervised>();
  private closed = false;

  constructor(
    private readonly dataDir: string,
    private readonly log: Logger,
    /** The agent's PATH, the one variable of its environment a service gets. */
    private readonly path = '/usr/local/bin:/usr/bin:/bin',
    /** Where the services' output lines go besides the tail and the file (the service's log store). */
    private readonly sink: OutputSink = () => undefined,
  ) {
    this.killStale();
  }

  list(stack: StackRef): Promise<Map<string, Supervised>> {
    const found = new Map<string, Supervised>();
    for (const s of this.services.values()) if (s.stack.id === stack.id) found.set(s.spec.name, s);
    return Promise.resolve(found);
  }

  /** The stack's volume directories go (volumes/<volume scope or stack id>/); none there is fine. */
  removeVolumes(stack: StackRef, ctx: StepContext): Promise<void> {
    const dir = this.volumesDir(volumeKey(stack));
    if (existsSync(dir)) {
      rmSync(dir, { recursive: true, force: true });
      ctx.log(`removed the stack's volume directories ${dir}`);
    }
    return Promise.resolve();
  }

  /**
   * Stops the service's process group; the stack's directory goes with its last service (its
   * volumes, in volumes/, stay until removeVolumes).
   */
  async remove(stack: StackRef, name: string, s: Supervised, ctx: StepContext): Promise<void> {
    ctx.log(`${name}: stopping`);
    await this.stop(s);
    this.services.delete(key(stack.id, name));
    if (![...this.services.values()].some((other) => other.stack.id === stack.id))
      rmSync(this.stackDir(stack.id), { recursive: true, force: true });
  }

  observe(): Promise<ObservedService[]> {
    return Promise.resolve(
      [...this.services.values()].map((s) => ({
        stackId: s.stack.id,
        name: s.spec.name,
        status: s.status,
        running: s.status === 'running',
        startedAt: s.status === 'running' ? s.startedAt : null,
        digest: s.spec.digest,
        actual: {
          image: '',
          command: s.spec.command,
          env: s.spec.env,
          ports: s.spec.ports,
          cpu: s.spec.cpu,
          memory_bytes: s.spec.memory_bytes,
        },
        restarts: s.restarts,
        exitCode: s.exitCode,
      })),
    );
  }

  status(stack: StackRef, name: string): Promise<ServiceStatus | null> {
    const s = this.services.get(key(stack.id, name));
    return Promise.resolve(
      s ? { status: s.status, running: s.status === 'running', exitCode: s.exitCode } : null,
    );
  }

  /**
   * Runs `argv` beside a running service as it runs itself (no shell, its environment plus PATH,
   * its working directory, its own process group), killed with its group past `timeoutMs`.
   */
  exec(stack: StackRef, name: string, argv: string[], timeoutMs: number): Promise<ExecResult> {
    const s = this.services.get(key(stack.id, name));
    if (!s || s.status !== 'running') return Promise.reject(new Error(`${name} is not running`));
    if (argv.length === 0) return Promise.reject(new Error('no command to run'));
    const [file, ...args] = argv;
    return new Promise((resolve, reject) => {
      let output = '';
      const child = spawn(file, args, {
        cwd: this.stackDir(stack.id),
        env: { PATH: this.path, ...s.spec.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      const collect = (chunk: Buffer) => {
        output = (output + chunk.toString('utf8')).slice(-MAX_EXEC_OUTPUT_CHARS);
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        signalGroup(child, 'SIGKILL');
      }, timeoutMs);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`cannot start ${file}: ${err.message}`));
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        signalGroup(child, 'SIGKILL'); // what it left behind goes with it
        if (timedOut) reject(new Error(`timed out after ${timeoutMs} ms`));
        else resolve({ exitCode: code ?? (signal ? 128 : 1), output });
      });
    });
  }

  /** The last lines a service wrote (stdout and stderr). */
  tail(stackId: string, name: string): string[] {
    return [...(this.services.get(key(stackId, name))?.tail ?? [])];
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.services.values()].map((s) => this.stop(s)));
  }

  // ---- one service ----

  async ensure(
    stack: StackRef,
    spec: ServiceSpec,
    existing: Supervised | undefined,
    ctx: StepContext & { replace: boolean },
  ): Promise<EnsureAction> {
    if (spec.image)
      throw new Error(
        `the process driver runs commands, not images (${spec.image}); place it on a docker worker`,
      );
    if (spec.command.length === 0) throw new Error('no command to run');
    // Only the monitoring stack's containers carry files; a process has no file system of its own.
    if (spec.files?.length)
      throw new Error('the process driver does not put files in place; place it on a docker worker');
    for (const v of spec.volumes ?? []) {
      if (v.type !== 'volume')
        throw new Error(
          `the process driver mounts nothing: ${v.type} mount at ${v.target} needs a docker worker`,
        );
      if (!v.source)
        throw new Error(`the process driver has no anonymous volumes (${v.target}); use a named volume`);
      if (!VOLUME_NAME.test(v.source))
        throw new Error(`volume name ${JSON.stringify(v.source)} is not valid`);
      if (v.read_only)
        throw new Error(
          `the process driver cannot make volume ${v.source} read-only; place it on a docker worker`,
        );
    }
    const options = spec.container ? containerOptionsSet(spec.container) : [];
    if (options.length > 0)
      throw new Error(
        `the process driver has no container options (${options.join(', ')}); place it on a docker worker`,
      );
    if (existing && existing.spec.digest === spec.digest && !ctx.replace) {
      existing.spec = spec; // health check settings may differ without a new digest
      if (
        existing.status === 'running' ||
        existing.status === 'starting' ||
        existing.status === 'restarting'
      ) {
        ctx.log(`${spec.name}: unchanged`);
        return 'unchanged';
      }
      ctx.log(`${spec.name}: not running; starting`);
      await this.started(existing);
      return 'started';
    }
    let action: 'created' | 'replaced' = 'created';
    if (existing) {
      ctx.log(`${spec.name}: configuration changed; replacing`);
      await this.stop(existing);
      action = 'replaced';
    } else ctx.log(`${spec.name}: starting ${spec.command[0]}`);
    const dir = this.stackDir(stack.id);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    for (const v of spec.volumes ?? []) {
      const path = join(this.volumesDir(volumeKey(stack)), v.source);
      if (!existsSync(path)) ctx.log(`${spec.name}: creating volume directory ${path}`);
      mkdirSync(path, { recursive: true, mode: 0o700 });
    }
    const s: Supervised = {
      stack,
      spec,
      child: null,
      status: 'starting',
      startedAt: null,
      restarts: 0,
      exitCode: null,
      delayMs: MIN_RESTART_DELAY_MS,
      restartTimer: undefined,
      stopping: false,
      tail: [],
      pipes: newPipes(),
      logFile: join(dir, `${spec.name}.log`),
      pidFile: join(dir, `${spec.name}.pid`),
    };
    this.services.set(key(stack.id, spec.name), s);
    await this.started(s);
    return action;
  }

  /** Starts the process; throws with the reason when it could not start at all. */
  private async started(s: Supervised): Promise<void> {
    const error = await this.start(s);
    if (error) throw new Error(error);
  }

  /** Spawns the process; resolves with an error text when it could not start at all. */
  private start(s: Supervised): Promise<string | null> {
    clearTimeout(s.restartTimer);
    s.stopping = false;
    s.status = 'starting';
    const [file, ...args] = s.spec.command;
    let child: ChildProcess;
    try {
      child = spawn(file, args, {
        cwd: this.stackDir(s.stack.id),
        env: { PATH: this.path, ...s.spec.env, ...this.volumeEnv(s) },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (err) {
      s.status = 'exited';
      return Promise.resolve((err as Error).message);
    }
    s.child = child;
    s.pipes = newPipes();
    for (const stream of ['stdout', 'stderr'] as const) {
      const pipe = child[stream];
      pipe?.on('data', (chunk: Buffer) => this.output(s, stream, chunk));
      pipe?.on('end', () => this.lines(s, stream, `${s.pipes[stream].decoder.end()}\n`));
    }
    return new Promise((resolve) => {
      child.once('spawn', () => {
        s.status = 'running';
        s.startedAt = new Date();
        s.exitCode = null;
        // The program beside the pid: a later agent only kills the pid if it still runs that.
        if (child.pid) writeFileSync(s.pidFile, `${child.pid}\n${file}`, { mode: PRIVATE_FILE_MODE });
        this.log.info({ stack_id: s.stack.id, service: s.spec.name, pid: child.pid }, 'service started');
        resolve(null);
      });
      child.once('error', (err) => {
        // Only reached when the spawn itself failed (ENOENT, EACCES): no exit event follows.
        if (s.child === child) {
          s.child = null;
          s.status = 'exited';
        }
        resolve(`cannot start ${file}: ${err.message}`);
      });
      child.once('exit', (code, signal) => this.exited(s, child, code, signal));
    });
  }

  private exited(
    s: Supervised,
    child: ChildProcess,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    if (s.child !== child) return;
    s.child = null;
    s.exitCode = code ?? (signal ? 128 : null);
    // What the service started and left behind goes with it (the group outlives its leader).
    signalGroup(child, 'SIGKILL');
    rmSync(s.pidFile, { force: true });
    const ranMs = s.startedAt ? Date.now() - s.startedAt.getTime() : 0;
    this.log.info(
      { stack_id: s.stack.id, service: s.spec.name, exit_code: code, signal, stopping: s.stopping },
      'service exited',
    );
    if (s.stopping || this.closed) {
      s.status = 'exited';
      return;
    }
    const failed = code !== 0;
    const restart = s.spec.restart === 'always' || (s.spec.restart === 'on-failure' && failed);
    if (!restart) {
      s.status = 'exited';
      return;
    }
    if (ranMs >= STABLE_RUN_MS) s.delayMs = MIN_RESTART_DELAY_MS;
    s.status = 'restarting';
    const delay = s.delayMs;
    s.delayMs = Math.min(MAX_RESTART_DELAY_MS, s.delayMs * 2);
    s.restartTimer = setTimeout(() => {
      if (s.stopping || this.closed || this.services.get(key(s.stack.id, s.spec.name)) !== s) return;
      s.restarts++;
      void this.start(s).then((error) => {
        if (error) {
          this.log.warn({ stack_id: s.stack.id, service: s.spec.name, error }, 'service restart failed');
          this.exited(s, s.child ?? child, 1, null);
        }
      });
    }, delay);
  }

  /** SIGTERM to the process group, SIGKILL after the grace period. */
  private stop(s: Supervised): Promise<void> {
    s.stopping = true;
    clearTimeout(s.restartTimer);
    const child = s.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      if (child) signalGroup(child, 'SIGKILL');
      s.status = 'exited';
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const kill = setTimeout(() => signalGroup(child, 'SIGKILL'), STOP_GRACE_MS);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      signalGroup(child, 'SIGTERM');
    });
  }

  private output(s: Supervised, stream: 'stdout' | 'stderr', chunk: Buffer): void {
    this.lines(s, stream, s.pipes[stream].decoder.write(chunk));
    try {
      if (existsSync(s.logFile) && statSync(s.logFile).size > MAX_OUTPUT_BYTES)
        renameSync(s.logFile, `${s.logFile}.1`);
      // The mode applies when the file is created, after each rotation too: output may hold secrets.
      appendFileSync(s.logFile, chunk, { mode: PRIVATE_FILE_MODE });
    } catch {
      // a full disk must not take the service down with it
    }
  }

  /** The complete lines of `text` after what the pipe held; the rest waits for the next chunk. */
  private lines(s: Supervised, stream: 'stdout' | 'stderr', text: string): void {
    const pipe = s.pipes[stream];
    const parts = (pipe.partial + text).split('\n');
    pipe.partial = parts.pop()!;
    while (pipe.partial.length > MAX_LINE_CHARS) {
      parts.push(pipe.partial.slice(0, MAX_LINE_CHARS));
      pipe.partial = pipe.partial.slice(MAX_LINE_CHARS);
    }
    for (const part of parts) {
      const line = part.endsWith('\r') ? part.slice(0, -1) : part;
      if (line === '') continue;
      for (let i = 0; i < line.length; i += MAX_LINE_CHARS) {
        const piece = line.slice(i, i + MAX_LINE_CHARS);
        s.tail.push(piece);
        if (s.tail.length > TAIL_LINES) s.tail.shift();
        this.sink(s.stack.id, s.spec.name, stream, piece);
      }
    }
  }

  private stackDir(stackId: string): string {
    return join(this.dataDir, 'services', stackId.replace(/[^A-Za-z0-9-]/g, ''));
  }

  /** `<data dir>/volumes/<stack id>`: the stack's named volumes, one directory each. */
  private volumesDir(key: string): string {
    return join(this.dataDir, 'volumes', key.replace(/[^A-Za-z0-9-]/g, ''));
  }

  /** STACK_VOLUME_<NAME> for each of the service's volumes: the path of its directory. */
  private volumeEnv(s: Supervised): Record<string, string> {
    const env: Record<string, string> = {};
    for (const v of s.spec.volumes ?? [])
      env[volumeEnvName(v.source)] = join(this.volumesDir(volumeKey(s.stack)), v.source);
    return env;
  }

  /** Processes a previous agent left behind (it was killed): stop them before applying again. */
  private killStale(): void {
    const root = join(this.dataDir, 'services');
    if (!existsSync(root)) return;
    for (const stackDir of readdirSync(root)) {
      let files: string[];
      try {
        files = readdirSync(join(root, stackDir));
      } catch {
        continue;
      }
      for (const file of files.filter((f) => f.endsWith('.pid'))) {
        const path = join(root, stackDir, file);
        const [pidText, program = ''] = readFileSync(path, 'utf8').split('\n');
        const pid = Number(pidText);
        if (Number.isInteger(pid) && pid > 1 && runs(pid, program)) {
          try {
            process.kill(-pid, 'SIGKILL');
            this.log.warn({ pid }, 'stopped a service process left by a previous agent');
          } catch {
            // already gone
          }
        }
        rmSync(path, { force: true });
      }
    }
  }
}

const newPipes = (): Record<'stdout' | 'stderr', Pipe> => ({
  stdout: { decoder: new StringDecoder('utf8'), partial: '' },
  stderr: { decoder: new StringDecoder('utf8'), partial: '' },
});

/** Whether `pid` still runs `program` (its first argument), so a reused pid is left alone. */
function runs(pid: number, program: string): boolean {
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
    return program !== '' && argv0 === program;
  } catch {
    return false;
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // gone
    }
  }
}
