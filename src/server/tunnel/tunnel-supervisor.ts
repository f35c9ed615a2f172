import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Gauge } from 'prom-client';
import type { TunnelState, TunnelStatus } from '../../contracts/api/tunnel.js';
import { Leases } from '../common/leases.js';
import { every } from '../common/periodic.js';
import { AppConfig } from '../config/config.js';
import { METRIC } from '../metrics/metric-names.js';
import { backoffDelay, TUNNEL_BACKOFF } from './backoff.js';
import { TunnelConfigError, type TunnelConnection } from './providers/tunnel-provider.js';
import { TunnelProviders } from './tunnel-providers.js';
import { TunnelRepository, type StoredTunnelState } from './tunnel.repository.js';

export const TUNNEL_LEASE = 'tunnel';
/** How long a dead replica keeps the tunnel from the others; it renews every tick. */
const LEASE_TTL_MS = 10_000;
const TICK_MS = 1000;
/** How long start waits for the first attempt before it answers the status as it stands. */
const START_WAIT_MS = 8000;

/**
 * Keeps the tunnel in the state operators asked for: the desired state is stored, so it survives
 * restarts and any replica may be asked; the replica holding the `tunnel` lease runs the one
 * connection, reconnects with capped exponential backoff and jitter when the link drops, and
 * reports its status to the database, from which every other replica answers.
 */
@Injectable()
export class TunnelSupervisor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('tunnel');
  private state: TunnelState = 'stopped';
  private connection: TunnelConnection | undefined;
  private attempt: AbortController | undefined;
  private failures = 0;
  private nextAttemptAt = 0;
  private startedAt: Date | null = null;
  private lastError: string | null = null;
  private holding = false;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closing = false;

  constructor(
    private readonly repository: TunnelRepository,
    private readonly leases: Leases,
    private readonly providers: TunnelProviders,
    private readonly config: AppConfig,
    @InjectMetric(METRIC.tunnelUp) private readonly up: Gauge,
    @InjectMetric(METRIC.tunnelReconnects) private readonly reconnects: Counter,
  ) {}

  onApplicationBootstrap(): void {
    this.up.set(0);
    this.timer = every(this.logger, 'tunnel supervision', TICK_MS, () => this.tick());
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    await this.ticking;
    // The desired state stays: the next start (here or on another replica) resumes the tunnel.
    await this.disconnect();
    if (this.holding) {
      // Said before the lease goes, so no replica reports a link that is gone as running.
      this.state = 'reconnecting';
      this.lastError = 'the replica holding the tunnel shut down; the next replica to start takes it over';
      await this.report().catch(() => undefined);
      await this.leases.release(TUNNEL_LEASE).catch(() => undefined);
    }
    this.holding = false;
  }

  /** Stores "running" and, on the replica that gets the lease, waits briefly for the first attempt. */
  async start(): Promise<{ changed: boolean; status: TunnelStatus }> {
    const problems = this.providers.current().checkConfig();
    if (problems.length > 0) throw new TunnelConfigError(problems);
    const changed = await this.repository.setDesired('running');
    // A tunnel in `error` (a refused host key, say) tries again when asked to start.
    if (this.state === 'error') this.resetBackoff();
    await this.freshTick();
    const deadline = Date.now() + START_WAIT_MS;
    while (this.holding && (this.state === 'starting' || this.attempt) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    return { changed, status: await this.status() };
  }

  async stop(): Promise<{ changed: boolean; status: TunnelStatus }> {
    const changed = await this.repository.setDesired('stopped');
    await this.freshTick();
    return { changed, status: await this.status() };
  }

  /** This replica's view when it holds the tunnel, else what the holder last reported. */
  async status(): Promise<TunnelStatus> {
    if (this.holding) return this.view();
    return this.fromStored(await this.repository.state());
  }

  /** The public URL while the tunnel runs (anywhere), for registry-url and install commands. */
  async runningUrl(): Promise<string | null> {
    const status = await this.status();
    return status.state === 'running' ? status.public_url : null;
  }

  /**
   * A step that reads the desired state after the caller changed it: a step already in progress
   * (which read it before) is waited for first, then another runs.
   */
  private async freshTick(): Promise<void> {
    if (this.ticking) await this.ticking.catch(() => undefined);
    await this.tick();
  }

  /** One supervision step; concurrent callers share the step in progress. */
  tick(): Promise<void> {
    this.ticking ??= this.step().finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private async step(): Promise<void> {
    if (this.closing) return;
    const stored = await this.repository.state();
    if (stored.desired === 'stopped') {
      if (this.holding || this.connection || this.attempt) await this.stopHere();
      return;
    }
    const held = await this.leases.acquire(TUNNEL_LEASE, LEASE_TTL_MS);
    if (!held) {
      if (this.holding) {
        this.logger.warn({}, 'tunnel lease lost to another replica: closing the tunnel here');
        await this.disconnect();
        this.holding = false;
        this.state = 'stopped';
        this.up.set(0);
      }
      return;
    }
    if (!this.holding) {
      this.holding = true;
      this.resetBackoff();
      this.logger.log({ holder: this.leases.holder }, 'this replica holds the tunnel');
    }
    if (this.state === 'error' || this.connection || this.attempt) {
      await this.report();
      return;
    }
    if (Date.now() >= this.nextAttemptAt) void this.connect();
    else await this.report();
  }

  private async connect(): Promise<void> {
    const provider = this.providers.current();
    const controller = new AbortController();
    this.attempt = controller;
    this.state = this.failures === 0 && this.startedAt === null ? 'starting' : 'reconnecting';
    await this.report();
    try {
      const connection = await provider.connect(controller.signal);
      if (this.attempt !== controller) {
        await connection.close();
        return;
      }
      this.connection = connection;
      this.failures = 0;
      this.state = 'running';
      this.lastError = null;
      this.startedAt ??= new Date();
      this.up.set(1);
      this.logger.log(
        {
          provider: provider.name,
          public_url: connection.publicUrl,
          agent_endpoint: connection.agentEndpoint,
        },
        'tunnel running',
      );
      void connection.closed.then(({ error }: { error?: string }) => this.lost(connection, error));
    } catch (err) {
      if (this.attempt !== controller) return;
      this.lastError = (err as Error).message;
      if (err instanceof TunnelConfigError) {
        this.state = 'error';
        this.logger.error({ provider: provider.name, error: this.lastError }, 'tunnel cannot start');
      } else {
        this.failures += 1;
        this.state = 'reconnecting';
        this.nextAttemptAt = Date.now() + backoffDelay(this.failures, TUNNEL_BACKOFF);
        this.logger.warn(
          { provider: provider.name, error: this.lastError, retry_in_ms: this.nextAttemptAt - Date.now() },
          'tunnel connection attempt failed',
        );
      }
    } finally {
      if (this.attempt === controller) this.attempt = undefined;
    }
    await this.report();
  }

  /** The link dropped by itself (not by close()): count it and try again after a backoff. */
  private async lost(connection: TunnelConnection, error: string | undefined): Promise<void> {
    if (this.connection !== connection) return;
    this.connection = undefined;
    this.up.set(0);
    if (this.closing) return;
    this.reconnects.inc();
    this.failures += 1;
    this.state = 'reconnecting';
    this.lastError = error ?? 'the tunnel closed';
    this.nextAttemptAt = Date.now() + backoffDelay(this.failures, TUNNEL_BACKOFF);
    this.logger.warn({ error: this.lastError, retry_in_ms: this.nextAttemptAt - Date.now() }, 'tunnel lost');
    await this.report().catch(() => undefined);
  }

  private async stopHere(): Promise<void> {
    this.state = 'stopping';
    await this.report();
    await this.disconnect();
    this.state = 'stopped';
    this.startedAt = null;
    this.lastError = null;
    this.resetBackoff();
    await this.report();
    await this.leases.release(TUNNEL_LEASE);
    this.holding = false;
    this.logger.log({}, 'tunnel stopped');
  }

  private async disconnect(): Promise<void> {
    this.attempt?.abort();
    this.attempt = undefined;
    const connection = this.connection;
    this.connection = undefined;
    this.up.set(0);
    await connection?.close();
  }

  private resetBackoff(): void {
    this.failures = 0;
    this.nextAttemptAt = 0;
    if (this.state === 'error') this.state = 'stopped';
  }

  private async report(): Promise<void> {
    if (!this.holding) return;
    const v = this.view();
    await this.repository.report(this.leases.holder, {
      state: v.state,
      provider: v.provider,
      publicUrl: v.public_url,
      agentEndpoint: v.agent_endpoint,
      startedAt: this.startedAt,
      lastError: v.last_error,
    });
  }

  private view(): TunnelStatus {
    return {
      state: this.state,
      provider: this.config.tunnel.provider,
      public_url: this.state === 'running' ? (this.connection?.publicUrl ?? null) : null,
      agent_endpoint: this.state === 'running' ? (this.connection?.agentEndpoint ?? null) : null,
      started_at: this.state === 'stopped' ? null : (this.startedAt?.toISOString() ?? null),
      last_error: this.lastError,
    };
  }

  private fromStored(s: StoredTunnelState): TunnelStatus {
    const provider = this.config.tunnel.provider;
    const stale = s.reportedAt === null || Date.now() - s.reportedAt.getTime() > LEASE_TTL_MS * 2;
    if (s.desired === 'running' && stale && s.state !== 'error')
      // The holder died (or none took over yet): some replica's next tick takes the lease.
      return {
        state: s.reportedAt === null ? 'starting' : 'reconnecting',
        provider,
        public_url: null,
        agent_endpoint: null,
        started_at: s.startedAt?.toISOString() ?? null,
        last_error: s.reportedAt === null ? null : 'the replica holding the tunnel stopped reporting',
      };
    if (s.desired === 'stopped' && s.state !== 'stopping') return stoppedStatus(provider);
    return {
      state: s.state,
      provider: s.provider ?? provider,
      public_url: s.state === 'running' ? s.publicUrl : null,
      agent_endpoint: s.state === 'running' ? s.agentEndpoint : null,
      started_at: s.startedAt?.toISOString() ?? null,
      last_error: s.lastError,
    };
  }
}

function stoppedStatus(provider: TunnelStatus['provider']): TunnelStatus {
  return {
    state: 'stopped',
    provider,
    public_url: null,
    agent_endpoint: null,
    started_at: null,
    last_error: null,
  };
}
