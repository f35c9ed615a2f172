/**
 * What an agent driver does: list one stack's services on this node, make one service as its spec
 * says (`ensure`), remove one, and say what is actually there (`observe`). `process` and `docker`
 * implement it. The order of the steps, ignored services (`keep`), cancellation and progress belong
 * to the one reconcile loop in reconcile.ts, so both drivers behave alike there.
 *
 * The shapes are the protocol's (src/contracts/agent-protocol/index.ts, held to agent.proto), narrowed where
 * the agent has already checked a value.
 */
import type {
  ContainerOptionsMsg,
  EffectiveConfigMsg,
  HealthCheckSpecMsg,
  PortSpecMsg,
  ServiceResultMsg,
  ServiceSpecMsg,
  VolumeMountMsg,
} from '../../contracts/agent-protocol/index.js';

export interface PortSpec extends Omit<PortSpecMsg, 'protocol'> {
  protocol: 'tcp' | 'udp';
}

export type HealthCheckSpec = HealthCheckSpecMsg;

/**
 * Storage mounted into a service (docs/drivers.md, "Volumes"): `volume` with a source is one of the
 * stack's named volumes, without one an anonymous volume; `bind` a host path; `tmpfs` memory.
 */
export interface VolumeMount extends Omit<VolumeMountMsg, 'type'> {
  type: 'volume' | 'bind' | 'tmpfs';
}

/** Docker-only container settings (docs/drivers.md, "Container options"). */
export type ContainerOptions = ContainerOptionsMsg;

/**
 * One service as a driver receives it: the proto `ServiceSpec`, with `env` already resolved
 * (`${NAME}` references replaced from the agent's environment). `digest` is the service's
 * configuration digest computed by the service; drivers keep it as a label or marker.
 */
export interface ServiceSpec extends Omit<ServiceSpecMsg, 'ports' | 'restart' | 'volumes' | 'container'> {
  ports: PortSpec[];
  restart: 'always' | 'on-failure' | 'never';
  /** Absent: none. */
  volumes?: VolumeMount[];
  /** Absent or null: the engine's defaults. */
  container?: ContainerOptions | null;
}

export interface StackRef {
  id: string;
  name: string;
  /**
   * What the stack's volumes are named by (JobCommand.volume_scope: 12 hex digits the service
   * derives from the stack's owner and name), so a stack destroyed without its volumes and made
   * again finds them, as `docker compose down` then `up` does. Absent: the stack id's first 12.
   */
  volumeScope?: string;
}

/** What `stack`'s volumes are named by: its volume scope, else its id (docs/drivers.md, "Volumes"). */
export const volumeKey = (stack: StackRef): string => stack.volumeScope ?? stack.id;

export type ServiceAction = 'created' | 'replaced' | 'unchanged' | 'started' | 'removed' | 'kept' | 'failed';

/** What `ensure` did to a service that is there as desired afterwards. */
export type EnsureAction = Extract<ServiceAction, 'created' | 'replaced' | 'unchanged' | 'started'>;

/** One row of a job's results (the proto `ServiceResult`). */
export interface ServiceResult extends ServiceResultMsg {
  action: ServiceAction;
}

/** The effective configuration read back from the runtime, for drift (never trimmed here). */
export interface EffectiveConfig extends Omit<
  EffectiveConfigMsg,
  'ports' | 'trimmed' | 'command_digest' | 'env_digest'
> {
  ports: PortSpec[];
}

export interface ObservedService {
  stackId: string;
  name: string;
  /** running | starting | restarting | exited | created */
  status: string;
  running: boolean;
  startedAt: Date | null;
  /** The digest marker the driver stored when it created the service. */
  digest: string;
  actual: EffectiveConfig | null;
  restarts: number;
  exitCode: number | null;
}

/** What one step (ensure or remove) of a reconcile gets. */
export interface StepContext {
  /** One output line for the job's log. */
  log(line: string): void;
  /** Aborted when the job is cancelled or times out; long steps (an image pull) stop with it. */
  signal: AbortSignal;
}

/** What a whole reconcile gets from the job runner. */
export interface ApplyContext extends StepContext {
  /** How far the reconcile is, in services done of total. */
  progress?(done: number, total: number): void;
  /**
   * Services to leave exactly as they are (ignored drift): neither created, replaced, started nor
   * removed, whatever the list says. Result action `kept`.
   */
  keep?: ReadonlySet<string>;
  /** Services to replace even when the digest matches (they were changed behind our back). */
  replace?: ReadonlySet<string>;
  /**
   * Honours the services' `start_conditions` (docs/drivers.md, "Start conditions"); without it they
   * are not waited for (an agent restoring its stacks at start, a cleanup's revert).
   */
  conditions?: StartConditionHooks;
  /** destroyStack only: remove the stack's volumes too once its services are gone. */
  deleteVolumes?: boolean;
}

/** What a dependency's health check says when a dependant waits for it. */
export type HealthWait = 'healthy' | 'unhealthy' | 'none' | 'cancelled';

/** The job runner's side of start conditions: the health checks of the stack's services. */
export interface StartConditionHooks {
  /**
   * Resolves when the service's check reaches a verdict: `healthy`, `unhealthy` (its retries are
   * exhausted), `none` when it has no check, `cancelled` when the signal was aborted first.
   */
  waitHealthy(name: string, signal: AbortSignal): Promise<HealthWait>;
  /** After each service ensured, so its check runs (from scratch when it was (re)started) at once. */
  ensured?(name: string, action: EnsureAction): void;
  /** How often a dependency's state is polled while a dependant waits; default 250 ms. */
  pollMs?: number;
}

/** One service's state, as `status` reads it (the fields of ObservedService that say it). */
export type ServiceStatus = Pick<ObservedService, 'status' | 'running' | 'exitCode'>;

/** What a command run in a service (`exec`) ended with: its exit code and the tail of its output. */
export interface ExecResult {
  exitCode: number;
  output: string;
}

/**
 * A runtime. `Found` is what `list` finds of one service (a process, a stack's containers for it),
 * handed back to `ensure` and `remove` so a reconcile looks at the node once.
 */
export interface Driver<Found = unknown> {
  readonly name: 'docker' | 'process';
  /** The stack's services on this node by name, any state. Throws when the runtime cannot be reached. */
  list(stack: StackRef): Promise<Map<string, Found>>;
  /**
   * Makes one service run as `spec` says (`replace`: even when the digest matches). Throws with the
   * reason for the job's results when it cannot; the other services go on.
   */
  ensure(
    stack: StackRef,
    spec: ServiceSpec,
    found: Found | undefined,
    ctx: StepContext & { replace: boolean },
  ): Promise<EnsureAction>;
  /** Removes one service; one already gone counts as removed. Throws when it cannot. */
  remove(stack: StackRef, name: string, found: Found, ctx: StepContext): Promise<void>;
  /**
   * Removes the stack's volumes (named and anonymous) from this node; call it once the stack's
   * services are gone. None there is fine. Throws when one cannot be removed.
   */
  removeVolumes(stack: StackRef, ctx: StepContext): Promise<void>;
  /** Everything on this node that carries our stack markers, desired or not. */
  observe(): Promise<ObservedService[]>;
  /** One service's state (null when it is not there): what `observe` says of it, cheaper. */
  status?(stack: StackRef, name: string): Promise<ServiceStatus | null>;
  /**
   * Runs `argv` in the service (in its container; beside its process, with its environment) and
   * resolves with the exit code and output; throws when it cannot run or takes over `timeoutMs`.
   */
  exec?(stack: StackRef, name: string, argv: string[], timeoutMs: number): Promise<ExecResult>;
  /** Stops supervising (agent shutdown); leaves containers running, stops child processes. */
  close(): Promise<void>;
}
