/**
 * What an agent driver does: bring one stack's services on this node to a desired list, remove a
 * stack, and say what is actually there. `process` and `docker` implement it; the job runner and
 * the state reporter only talk to this interface.
 */

export interface PortSpec {
  container: number;
  host: number;
  protocol: 'tcp' | 'udp';
}

export interface HealthCheckSpec {
  path: string;
  port: number;
  interval_ms: number;
}

/** One service as the agent receives it (the proto `ServiceSpec`). */
export interface ServiceSpec {
  name: string;
  image: string;
  command: string[];
  /** Already resolved: `${NAME}` references replaced from the agent's environment. */
  env: Record<string, string>;
  ports: PortSpec[];
  cpu: number;
  memory_bytes: number;
  restart: 'always' | 'on-failure' | 'never';
  health_check: HealthCheckSpec | null;
  /** The service's configuration digest computed by the service; kept as a label/marker. */
  digest: string;
}

export interface StackRef {
  id: string;
  name: string;
}

export type ServiceAction = 'created' | 'replaced' | 'unchanged' | 'started' | 'removed' | 'kept' | 'failed';

export interface ServiceResult {
  name: string;
  action: ServiceAction;
  ok: boolean;
  error: string;
}

/** The effective configuration read back from the runtime, for drift. */
export interface EffectiveConfig {
  image: string;
  command: string[];
  env: Record<string, string>;
  ports: PortSpec[];
  cpu: number;
  memory_bytes: number;
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

export interface ApplyContext {
  /** One output line for the job's log. */
  log(line: string): void;
  /** Aborted when the job is cancelled or times out. */
  signal: AbortSignal;
  /** Optional: how far the apply is, in services done of total. */
  progress?(done: number, total: number): void;
  /**
   * Services to leave exactly as they are (ignored drift): apply neither creates, replaces, starts
   * nor removes them, whatever the list says. Result action `kept`.
   */
  keep?: ReadonlySet<string>;
  /** Services to replace even when the digest matches (they were changed behind our back). */
  replace?: ReadonlySet<string>;
}

export interface Driver {
  readonly name: 'docker' | 'process';
  /** Brings the stack's services on this node to exactly `services`; idempotent. */
  apply(stack: StackRef, services: ServiceSpec[], ctx: ApplyContext): Promise<ServiceResult[]>;
  /** Removes every service of the stack from this node. */
  destroy(stack: StackRef, ctx: ApplyContext): Promise<ServiceResult[]>;
  /** Everything on this node that carries our stack markers, desired or not. */
  observe(): Promise<ObservedService[]>;
  /** Stops supervising (agent shutdown); leaves containers running, stops child processes. */
  close(): Promise<void>;
}
