import { PassThrough } from 'node:stream';
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import Docker from 'dockerode';
import type { Logger } from 'pino';
import {
  DOCKER_LABELS,
  containerName,
  createOptions,
  networkName,
  normalizeStatus,
  observedService,
  parseEnv,
  scopeLabel,
  volumesOf,
  type ImageDefaults,
  type Ulimit,
} from './docker-containers.js';
import type {
  Driver,
  EnsureAction,
  ExecResult,
  ObservedService,
  ServiceSpec,
  ServiceStatus,
  StackRef,
  StepContext,
} from './driver.js';
import { tarArchive } from './tar-archive.js';
import { timestampNs, type LogSource } from '../log-shipper.js';

export {
  DOCKER_LABELS,
  anonymousVolumeName,
  containerName,
  networkName,
  volumeName,
  type Ulimit,
} from './docker-containers.js';

export interface DockerDriverOptions {
  /** Unix socket of the Docker Engine API; default: `DOCKER_HOST` when it is `unix://…`, else /var/run/docker.sock. */
  socketPath?: string;
  log: Logger;
  /**
   * Ulimits set on every container. None by default (the engine's own). Needed where the engine asks
   * for more than the agent's process may grant, e.g. rootful podman without CAP_SYS_RESOURCE.
   */
  ulimits?: Ulimit[];
  /**
   * Host address published ports bind to; default every interface (the engine's default, as
   * `docker run -p`). Leave it unset rather than "0.0.0.0": podman 4.3 with netavark 1.4 turns an
   * explicit 0.0.0.0 into DNAT rules for the literal address 0.0.0.0/32, which nothing reaches.
   */
  publishAddress?: string;
  /**
   * Seconds between SIGTERM and SIGKILL when a container is replaced or removed; default 10, 0 kills
   * at once. A service's own stop_grace_period wins for its containers.
   */
  stopTimeoutSeconds?: number;
  /**
   * Host directories a service may bind-mount (a path inside one of them); none by default, so
   * every bind is refused (the agent's `--allow-host-path`).
   */
  allowHostPaths?: string[];
}

/** One of our volumes on this node (docs/drivers.md, "Volumes"). */
export interface VolumeInfo {
  /** The stack's name for it; an anonymous volume's is its engine name. */
  name: string;
  stackId: string;
  anonymous: boolean;
  /** The service an anonymous volume belongs to. */
  service?: string;
  engineName: string;
  createdAt: Date | null;
  /** From the engine's disk usage; null when it does not say. */
  sizeBytes: number | null;
}

/**
 * Throws unless `source` is inside one of `allowed` (after resolving `..`, and symbolic links where
 * the path exists, on both sides). `/` allows everything; nothing is allowed by default.
 */
export function checkHostPath(source: string, allowed: readonly string[]): void {
  const refuse = () =>
    new Error(
      `bind of ${source} is refused: the agent allows host paths only under --allow-host-path directories (${
        allowed.length > 0 ? allowed.join(', ') : 'none set'
      })`,
    );
  if (!isAbsolute(source)) throw refuse();
  const candidates = [resolve(source)];
  const real = realIfExists(source);
  if (real) candidates.push(real);
  const dirs = allowed.flatMap((dir) => {
    const real = realIfExists(dir);
    return real ? [resolve(dir), real] : [resolve(dir)];
  });
  const inside = (path: string) =>
    dirs.some((dir) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep));
  if (!candidates.every(inside)) throw refuse();
}

/**
 * The path with symbolic links resolved as far as it exists (the engine follows them when it
 * mounts): the real path of its longest existing ancestor, with the rest appended.
 */
function realIfExists(path: string): string | undefined {
  let head = resolve(path);
  const rest: string[] = [];
  for (;;) {
    try {
      if (existsSync(head)) return join(realpathSync(head), ...rest.reverse());
    } catch {
      return undefined;
    }
    const parent = dirname(head);
    if (parent === head) return undefined;
    rest.push(basename(head));
    head = parent;
  }
}

/** `DOCKER_HOST=unix:///path` gives /path; anything else (tcp, unset) the usual socket. */
export function defaultDockerSocket(dockerHost: string | undefined): string {
  if (dockerHost?.startsWith('unix://')) return dockerHost.slice('unix://'.length);
  return '/var/run/docker.sock';
}

/** `nofile=1024:1024,nproc=512` (soft:hard, or one value for both) as ulimits; throws on nonsense. */
export function parseUlimits(text: string): Ulimit[] {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
    .map((item) => {
      const match = /^([a-z]+)=(\d+)(?::(\d+))?$/.exec(item);
      if (!match) throw new Error(`invalid ulimit "${item}": expected name=soft[:hard]`);
      const soft = Number(match[2]);
      const hard = match[3] === undefined ? soft : Number(match[3]);
      if (soft > hard) throw new Error(`invalid ulimit "${item}": soft limit above hard limit`);
      return { name: match[1], soft, hard };
    });
}

interface Managed {
  id: string;
  name: string;
  service: string;
  digest: string;
  state: string;
  /** The service's own stop timeout in seconds (label), else undefined: the driver's. */
  stopTimeout: number | undefined;
}

export class DockerDriver implements Driver<Managed[]> {
  readonly name = 'docker' as const;
  private readonly docker: Docker;
  private readonly log: Logger;
  private readonly socketPath: string;
  private readonly ulimits: Ulimit[];
  private readonly publishAddress: string;
  private readonly stopTimeout: number;
  private readonly allowHostPaths: string[];

  constructor(options: DockerDriverOptions) {
    this.socketPath = options.socketPath ?? defaultDockerSocket(undefined);
    this.docker = new Docker({ socketPath: this.socketPath });
    this.log = options.log.child({ driver: 'docker' });
    this.ulimits = options.ulimits ?? [];
    this.publishAddress = options.publishAddress ?? '';
    this.stopTimeout = options.stopTimeoutSeconds ?? 10;
    this.allowHostPaths = options.allowHostPaths ?? [];
  }

  /** The stack's containers (any state), one list per service: leftovers of one service are removed by ensure. */
  async list(stack: StackRef): Promise<Map<string, Managed[]>> {
    return groupByService(await this.stackContainers(stack.id));
  }

  async ensure(
    stack: StackRef,
    spec: ServiceSpec,
    containers: Managed[] = [],
    ctx: StepContext & { replace: boolean },
  ): Promise<EnsureAction> {
    try {
      return await this.ensureService(stack, spec, containers, ctx);
    } catch (err) {
      throw this.failed(stack, spec.name, err);
    }
  }

  async remove(stack: StackRef, service: string, containers: Managed[], ctx: StepContext): Promise<void> {
    try {
      for (const container of containers) {
        ctx.log(`${service}: removing ${container.name}`);
        await this.removeContainer(container);
      }
      if ((await this.stackContainers(stack.id)).length === 0) await this.removeNetwork(stack, ctx);
    } catch (err) {
      throw this.failed(stack, service, err);
    }
  }

  /** The stack's named and anonymous volumes go (by its scope label, or its stack-id label); none there is fine. */
  async removeVolumes(stack: StackRef, ctx: StepContext): Promise<void> {
    const volumes = await this.ourVolumes(stack);
    for (const volume of volumes) {
      try {
        await this.docker.getVolume(volume.Name).remove();
        ctx.log(`removed volume ${volume.Name}`);
      } catch (err) {
        if (statusCode(err) !== 404)
          throw new Error(`volume ${volume.Name} could not be removed: ${describe(err)}`, { cause: err });
      }
    }
  }

  /** Our volumes on this node (all stacks'), with their sizes where the engine reports them. */
  async listVolumes(): Promise<VolumeInfo[]> {
    const volumes = await this.ourVolumes();
    const df = await this.engine('disk usage', () => this.docker.df() as Promise<DiskUsage>);
    const sizes = new Map<string, number>();
    for (const v of df.Volumes ?? []) {
      const size = v.UsageData?.Size;
      if (typeof size === 'number' && size >= 0) sizes.set(v.Name, size);
    }
    return volumes
      .map((v) => {
        const labels = v.Labels ?? {};
        const anonymous = labels[DOCKER_LABELS.anonymous] === 'true';
        const created = (v as { CreatedAt?: string }).CreatedAt;
        return {
          name: labels[DOCKER_LABELS.volume] ?? v.Name,
          stackId: labels[DOCKER_LABELS.stackId] ?? '',
          anonymous,
          ...(anonymous && labels[DOCKER_LABELS.service] ? { service: labels[DOCKER_LABELS.service] } : {}),
          engineName: v.Name,
          createdAt: created ? new Date(created) : null,
          sizeBytes: sizes.get(v.Name) ?? null,
        };
      })
      .sort((a, b) => (a.engineName < b.engineName ? -1 : a.engineName > b.engineName ? 1 : 0));
  }

  async observe(): Promise<ObservedService[]> {
    const list = await this.engine('list containers', () =>
      this.docker.listContainers({ all: true, filters: { label: [`${DOCKER_LABELS.managed}=true`] } }),
    );
    const imageEnv = new Map<string, Promise<ImageDefaults>>();
    const observed: ObservedService[] = [];
    for (const entry of list) {
      let info: Docker.ContainerInspectInfo;
      try {
        info = await this.docker.getContainer(entry.Id).inspect();
      } catch (err) {
        if (vanished(err)) continue; // removed between list and inspect
        throw err;
      }
      let defaults = imageEnv.get(info.Image);
      if (!defaults) {
        defaults = this.imageDefaults(info.Image);
        imageEnv.set(info.Image, defaults);
      }
      observed.push(observedService(info, await defaults));
    }
    return observed;
  }

  /** The service's container's state, by its name (containerName); null when there is none. */
  async status(stack: StackRef, name: string): Promise<ServiceStatus | null> {
    let info: Docker.ContainerInspectInfo;
    try {
      info = await this.docker.getContainer(containerName(stack.id, name)).inspect();
    } catch (err) {
      if (vanished(err)) return null;
      throw new Error(describe(err), { cause: err });
    }
    const { status, running, exitCode } = observedService(info, { env: {}, cmd: [] });
    return { status, running, exitCode };
  }

  /**
   * Runs `argv` in the service's container (the Engine API's exec: create, start attached, read
   * the output until it ends, inspect the exit code). Past `timeoutMs` the stream is dropped and
   * this throws; the engine has no call to kill an exec, so the command may run on by itself.
   */
  async exec(stack: StackRef, name: string, argv: string[], timeoutMs: number): Promise<ExecResult> {
    const container = this.docker.getContainer(containerName(stack.id, name));
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const exec = await container.exec({ Cmd: argv, AttachStdout: true, AttachStderr: true });
      const stream = await exec.start({ hijack: true, stdin: false, abortSignal: signal });
      const output = new OutputTail();
      await new Promise<void>((resolve, reject) => {
        const sink = new PassThrough();
        sink.on('data', (chunk: Buffer) => output.push(chunk));
        this.docker.modem.demuxStream(stream, sink, sink);
        const abort = () => {
          stream.destroy();
          reject(new Error(`timed out after ${timeoutMs} ms`));
        };
        if (signal.aborted) abort();
        signal.addEventListener('abort', abort, { once: true });
        const done = () => {
          signal.removeEventListener('abort', abort);
          resolve();
        };
        stream.on('end', done);
        stream.on('close', done);
        stream.on('error', (err: Error) => {
          signal.removeEventListener('abort', abort);
          reject(err);
        });
      });
      // The exit code can lag the end of the stream by a moment.
      for (let i = 0; ; i++) {
        const info = await exec.inspect();
        if (!info.Running && info.ExitCode !== null)
          return { exitCode: info.ExitCode, output: output.text() };
        if (i >= 50 || signal.aborted) throw new Error(`timed out after ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } catch (err) {
      if (signal.aborted) throw new Error(`timed out after ${timeoutMs} ms`, { cause: err });
      throw new Error(describe(err), { cause: err });
    }
  }

  /** The stack's containers' output, for the log shipper (docker logs, with timestamps). */
  logSource(): LogSource {
    return {
      running: async (stack) =>
        (await this.stackContainers(stack.id))
          .filter((c) => c.state === 'running')
          .map((c) => ({ service: c.service, id: c.id })),
      follow: async (id, sinceSeconds, line, signal) => {
        const stream = await this.docker.getContainer(id).logs({
          follow: true,
          stdout: true,
          stderr: true,
          timestamps: true,
          since: sinceSeconds,
          abortSignal: signal,
        });
        const lines = new LogLines(line);
        await new Promise<void>((resolve, reject) => {
          stream.on('data', (chunk: Buffer) => lines.push(chunk));
          stream.on('end', resolve);
          stream.on('close', resolve);
          stream.on('error', (err: Error) => (signal.aborted ? resolve() : reject(err)));
          signal.addEventListener('abort', () => resolve(), { once: true });
        });
        lines.end();
      },
    };
  }

  /** Containers keep running without the agent; there is nothing to stop. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  private async ensureService(
    stack: StackRef,
    spec: ServiceSpec,
    containers: Managed[],
    ctx: StepContext & { replace: boolean },
  ): Promise<EnsureAction> {
    const say = (line: string) => ctx.log(`${spec.name}: ${line}`);
    // Before anything changes: a refused bind must not take the running container down.
    for (const v of spec.volumes ?? []) if (v.type === 'bind') checkHostPath(v.source, this.allowHostPaths);
    // Prefer a running container with the desired digest; any others are leftovers.
    const ranked = [...containers].sort((a, b) => rank(b, spec.digest) - rank(a, spec.digest));
    const [current, ...extra] = ranked;
    for (const leftover of extra) {
      say(`removing leftover container ${leftover.name}`);
      await this.removeContainer(leftover);
    }
    if (current && current.digest === spec.digest && !ctx.replace) {
      if (current.state === 'running' || current.state === 'restarting') {
        return 'unchanged';
      }
      const container = this.docker.getContainer(current.id);
      if (current.state === 'paused') {
        say(`unpausing ${current.name}`);
        await container.unpause();
      } else {
        // Also when it exited under restart "never": apply means "make it as desired".
        say(`starting ${current.name} (was ${current.state})`);
        await container.start();
      }
      return 'started';
    }
    // The image first: a missing image must not take the running container down with it.
    await this.ensureImage(spec.image, say, ctx.signal);
    // The volumes too: one that cannot be had (another stack's) leaves the old container running.
    for (const volume of volumesOf(stack, spec)) await this.ensureVolume(volume.name, volume.labels, say);
    if (current) {
      say(`replacing ${current.name} (digest ${current.digest || 'none'} -> ${spec.digest})`);
      await this.removeContainer(current);
    }
    await this.ensureNetwork(stack);
    const name = containerName(stack.id, spec.name);
    say(`creating ${name} from ${spec.image}`);
    const container = await this.docker.createContainer(
      createOptions(stack, spec, name, { publishAddress: this.publishAddress, ulimits: this.ulimits }),
    );
    try {
      const files = spec.files ?? [];
      if (files.length > 0) {
        // Names only: a file may hold a credential.
        say(`writing ${files.map((f) => f.path).join(', ')}`);
        await container.putArchive(tarArchive(files), { path: '/' });
      }
      await container.start();
    } catch (err) {
      // A container that never started (port taken, bad command) is not left behind.
      await container.remove({ force: true }).catch(() => undefined);
      throw err;
    }
    say(`started ${name}`);
    return current ? 'replaced' : 'created';
  }

  /** The stack's network (networkName), made when its first container is; one already there is fine. */
  private async ensureNetwork(stack: StackRef): Promise<void> {
    const name = networkName(stack.id);
    try {
      await this.docker.getNetwork(name).inspect();
      return;
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
    try {
      await this.docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Labels: {
          [DOCKER_LABELS.managed]: 'true',
          [DOCKER_LABELS.stackId]: stack.id,
          [DOCKER_LABELS.stackName]: stack.name,
        },
      });
    } catch (err) {
      if (statusCode(err) !== 409) throw err; // made meanwhile
    }
  }

  /**
   * A volume of the stack, made on first use; one already there is reused as it is: one of the
   * same volume scope (an earlier stack of the same owner and name, destroyed without its volumes:
   * reattached, as `docker compose up` after `down` does), or one made by hand (no stack-id label),
   * as Compose does, which stays when the stack's volumes are removed (they go by label). One
   * labelled for another scope is refused.
   */
  private async ensureVolume(
    name: string,
    labels: Record<string, string>,
    say: (line: string) => void,
  ): Promise<void> {
    let existing: Record<string, string> | undefined;
    try {
      const found = (await this.docker.getVolume(name).inspect()) as {
        Labels?: Record<string, string> | null;
      };
      existing = found.Labels ?? {};
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
    if (existing !== undefined) {
      const owner = existing[DOCKER_LABELS.stackId] ?? '';
      const scope = existing[DOCKER_LABELS.volumeScope];
      if (owner === '') {
        say(`volume ${name} was not made by the agent: using it; it is not removed with the stack`);
        return;
      }
      if (owner === labels[DOCKER_LABELS.stackId]) return;
      if (scope !== undefined && scope === labels[DOCKER_LABELS.volumeScope]) {
        say(`volume ${name} kept from an earlier stack of this name: reattaching it with its data`);
        return;
      }
      throw new Error(`volume ${name} belongs to another stack (${owner})`);
    }
    say(`creating volume ${name}`);
    try {
      await this.docker.createVolume({ Name: name, Driver: 'local', Labels: labels });
    } catch (err) {
      if (statusCode(err) !== 409) throw err; // made meanwhile
    }
  }

  /** Our volumes, all or one stack's (by its volume scope when it has one, else by its id). */
  private async ourVolumes(stack?: StackRef): Promise<Docker.VolumeInspectInfo[]> {
    const label = [`${DOCKER_LABELS.managed}=true`];
    const by: [string, string] | undefined = stack
      ? stack.volumeScope
        ? [DOCKER_LABELS.volumeScope, scopeLabel(stack)]
        : [DOCKER_LABELS.stackId, stack.id]
      : undefined;
    if (by) label.push(`${by[0]}=${by[1]}`);
    const list = await this.engine('list volumes', () => this.docker.listVolumes({ filters: { label } }));
    // Filtered again here: an engine that ignored a filter must not make us remove another's volume.
    return (list.Volumes ?? []).filter(
      (v) => v.Labels?.[DOCKER_LABELS.managed] === 'true' && (by === undefined || v.Labels[by[0]] === by[1]),
    );
  }

  /** After the stack's last container: its network goes too. Gone already is fine. */
  private async removeNetwork(stack: StackRef, ctx: StepContext): Promise<void> {
    try {
      await this.docker.getNetwork(networkName(stack.id)).remove();
      ctx.log(`removed network ${networkName(stack.id)}`);
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
  }

  /** An engine error in the words people should read (the engine's message), logged once here. */
  private failed(stack: StackRef, service: string, err: unknown): Error {
    const error = describe(err);
    this.log.warn({ stack_id: stack.id, service, err: error }, 'docker service apply failed');
    return new Error(error, { cause: err });
  }

  /** Graceful stop (SIGTERM, then SIGKILL after the timeout), then forced removal. Gone already is fine. */
  private async removeContainer(target: Managed): Promise<void> {
    const container = this.docker.getContainer(target.id);
    const timeout = target.stopTimeout ?? this.stopTimeout;
    try {
      if (timeout > 0 && (target.state === 'running' || target.state === 'restarting')) {
        await container.stop({ t: timeout }).catch((err: unknown) => {
          if (statusCode(err) !== 304) throw err; // 304: already stopped
        });
      }
      await container.remove({ force: true });
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
  }

  private async ensureImage(image: string, say: (line: string) => void, signal: AbortSignal): Promise<void> {
    try {
      await this.docker.getImage(image).inspect();
      return;
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
    }
    say(`image ${image} is not on this node: pulling`);
    try {
      const stream = await this.docker.pull(image, { abortSignal: signal });
      const events = await new Promise<PullEvent[]>((resolve, reject) =>
        this.docker.modem.followProgress(stream, (err, output: PullEvent[]) =>
          err ? reject(err) : resolve(output),
        ),
      );
      // The engine reports a failed pull inside the stream, with a 200.
      const failure = events.find((e) => e.error ?? e.errorDetail?.message);
      if (failure) throw new Error(failure.error ?? failure.errorDetail?.message);
    } catch (err) {
      throw new Error(
        `image ${image} is not present on this node and could not be pulled: ${describe(err)}`,
        {
          cause: err,
        },
      );
    }
    say(`pulled ${image}`);
  }

  private async stackContainers(stackId: string): Promise<Managed[]> {
    const list = await this.engine('list containers', () =>
      this.docker.listContainers({
        all: true,
        filters: { label: [`${DOCKER_LABELS.managed}=true`, `${DOCKER_LABELS.stackId}=${stackId}`] },
      }),
    );
    return list.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? c.Id).replace(/^\//, ''),
      service: c.Labels[DOCKER_LABELS.service] ?? '',
      digest: c.Labels[DOCKER_LABELS.digest] ?? '',
      state: normalizeStatus(c.State),
      stopTimeout: stopTimeoutLabel(c.Labels[DOCKER_LABELS.stopTimeout]),
    }));
  }

  private async imageDefaults(imageId: string): Promise<ImageDefaults> {
    try {
      const image = await this.docker.getImage(imageId).inspect();
      return { env: parseEnv(image.Config?.Env ?? []), cmd: image.Config?.Cmd ?? [] };
    } catch (err) {
      // Image removed under a container: nothing to subtract.
      if (statusCode(err) === 404) return { env: {}, cmd: [] };
      throw err;
    }
  }

  /** Engine-wide calls: an unreachable engine fails the whole operation with the socket named. */
  private async engine<T>(what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw new Error(`docker engine at ${this.socketPath}: ${what} failed: ${describe(err)}`, {
        cause: err,
      });
    }
  }
}

/**
 * The Engine API's multiplexed log stream (containers without a TTY): frames of an 8-byte header
 * (stream 1 stdout or 2 stderr, three zero bytes, the payload's length big-endian) and the payload;
 * lines start with their RFC 3339 timestamp (`timestamps=1`).
 */
class LogLines {
  private pending: Buffer = Buffer.alloc(0);
  private readonly partial = { stdout: '', stderr: '' };

  constructor(private readonly line: (stream: 'stdout' | 'stderr', ns: bigint, text: string) => void) {}

  push(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 8) {
      const size = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + size) return;
      const stream = this.pending[0] === 2 ? 'stderr' : 'stdout';
      const text = this.partial[stream] + this.pending.subarray(8, 8 + size).toString('utf8');
      this.pending = this.pending.subarray(8 + size);
      const parts = text.split('\n');
      this.partial[stream] = parts.pop() ?? '';
      for (const part of parts) this.emit(stream, part);
    }
  }

  end(): void {
    for (const stream of ['stdout', 'stderr'] as const)
      if (this.partial[stream]) this.emit(stream, this.partial[stream]);
  }

  private emit(stream: 'stdout' | 'stderr', raw: string): void {
    const space = raw.indexOf(' ');
    const ns = space > 0 ? timestampNs(raw.slice(0, space)) : undefined;
    if (ns === undefined) return; // not a timestamped line: nothing the engine sends
    this.line(stream, ns, raw.slice(space + 1).replace(/\r$/, ''));
  }
}

/** The last bytes of a command's output (stdout and stderr together). */
class OutputTail {
  private chunks: Buffer[] = [];
  private size = 0;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > MAX_EXEC_OUTPUT_BYTES && this.chunks.length > 1)
      this.size -= this.chunks.shift()!.length;
  }

  text(): string {
    return Buffer.concat(this.chunks).subarray(-MAX_EXEC_OUTPUT_BYTES).toString('utf8');
  }
}

/** What an exec keeps of its output: the end, which says why it failed. */
const MAX_EXEC_OUTPUT_BYTES = 4096;

interface PullEvent {
  status?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/** What `/system/df` says of volumes (dockerode types it `any`). */
interface DiskUsage {
  Volumes?: { Name: string; UsageData?: { Size?: number } | null }[] | null;
}

function stopTimeoutLabel(label: string | undefined): number | undefined {
  const seconds = Number(label);
  return label && Number.isInteger(seconds) && seconds > 0 ? seconds : undefined;
}

function groupByService(containers: Managed[]): Map<string, Managed[]> {
  const groups = new Map<string, Managed[]>();
  for (const c of containers) {
    const group = groups.get(c.service);
    if (group) group.push(c);
    else groups.set(c.service, [c]);
  }
  return groups;
}

function rank(c: Managed, digest: string): number {
  return (c.digest === digest ? 2 : 0) + (c.state === 'running' ? 1 : 0);
}

/**
 * A container that is gone: Docker answers 404; podman, when the removal races the inspect, 500
 * with "no such container" ("does not exist in database").
 */
function vanished(err: unknown): boolean {
  return statusCode(err) === 404 || /no such container/i.test(describe(err));
}

function statusCode(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null && 'statusCode' in err
    ? (err as { statusCode?: number }).statusCode
    : undefined;
}

/** Engine errors carry the useful text in `json.message` / `reason`; dockerode's message repeats the code. */
function describe(err: unknown): string {
  if (err instanceof Error) {
    const json = (err as { json?: { message?: string; cause?: string } }).json;
    return json?.message ?? json?.cause ?? err.message;
  }
  return String(err);
}
