import * as grpc from '@grpc/grpc-js';
import { existsSync } from 'node:fs';
import { hostname, networkInterfaces, cpus, totalmem } from 'node:os';
import type { Logger } from 'pino';
import {
  IDENTITY_REVOKED,
  loadAgentProto,
  probeAnswer,
  type AgentMessage,
  type RenewCertificateRequest,
  type RenewCertificateResponse,
  type ServerMessage,
} from '../contracts/agent-protocol/index.js';
import { MAX_AGENT_MESSAGE_BYTES } from '../contracts/agent-protocol/limits.js';
import {
  AGENT_MAX_BACKOFF_MS,
  AGENT_MIN_BACKOFF_MS,
  AGENT_WELCOME_TIMEOUT_MS,
} from '../contracts/agent-protocol/reconnect.js';
import { repairDataDir } from '../contracts/private-files.js';
import {
  certificateValidity,
  IDENTITY_FILES,
  IdentityStore,
  newKeyAndCsr,
  type Identity,
} from './identity.js';
import { agentChecks, CpuSampler, nodeMetrics } from './node-metrics.js';
import { probe, startProbeListener } from './probe.js';
import { DockerDriver, defaultDockerSocket, parseUlimits } from './drivers/docker.driver.js';
import type { Driver } from './drivers/driver.js';
import { ProcessDriver } from './drivers/process.driver.js';
import { Enrollment, FatalAgentError } from './enrollment.js';
import { JobRunner } from './job-runner.js';
import { LogShipper } from './log-shipper.js';
import { ServiceOutput } from './service-output.js';
import { ResumingCredentials, TlsSessionStore } from './tls-session.js';
import {
  Backoff,
  candidateEndpoint,
  candidateTarget,
  formatEndpoint,
  resolveCandidates,
  Rotation,
  storedEndpoints,
  type Candidate,
  type Endpoint,
} from './server-addresses.js';

export { FatalAgentError };
import type { Server } from 'node:net';

/**
 * What the agent keeps in its data directory (the identity, the desired state under stacks/, the
 * process driver's services/): the entries the repair at start walks.
 */
const DATA_DIR_ENTRIES = [...IDENTITY_FILES, 'stacks', 'services'];

export interface AgentOptions {
  /** The service's URLs (enrollment and approval polls); one at a time, moving on when one fails. */
  servers: string[];
  token: string | undefined;
  dataDir: string;
  name: string | undefined;
  driver: 'docker' | 'process';
  caFingerprint: string | undefined;
  labels: Record<string, string>;
  address: string | undefined;
  version: string;
  /** Override the endpoints the service advertised (e.g. behind NAT, or one per replica). */
  agentEndpoints: Endpoint[] | undefined;
  /** Where the probe listener binds; port 0 picks a free one; undefined turns it off. */
  probe: { host: string; port: number } | undefined;
  /** Docker driver: the Engine API socket, and ulimits for every container (`nofile=1024:1024`). */
  dockerSocket?: string;
  dockerUlimits?: string;
  /** Docker driver: the host directories services may bind-mount (--allow-host-path); none by default. */
  allowHostPaths?: string[];
  /** The agent's environment (read once by main): PATH, DOCKER_HOST and `${NAME}` values. */
  env: Readonly<Record<string, string | undefined>>;
}

type Outcome = 'revoked' | 'renewed' | 'healthy-close' | 'failed';

type Stream = grpc.ClientDuplexStream<AgentMessage, ServerMessage>;
type GatewayClient = grpc.Client & {
  Connect(): Stream;
  RenewCertificate(
    req: RenewCertificateRequest,
    cb: (err: grpc.ServiceError | null, res?: RenewCertificateResponse) => void,
  ): void;
};

/** Thrown when the agent cannot go on without the operator (bad token, CA pin mismatch). */

/**
 * The agent: enrolls with a join token, waits for approval, then keeps one mTLS stream to the
 * service's agent port with heartbeats at the interval the service sets. Reconnects with
 * exponential backoff and full jitter; renews its certificate at two thirds of its lifetime; enrolls
 * again when the service has revoked its identity.
 */
export class Agent {
  private readonly store: IdentityStore;
  private readonly proto = loadAgentProto();
  private readonly cpu = new CpuSampler();
  private readonly runner: JobRunner;
  private readonly enrollment: Enrollment;
  private readonly dockerSocket: string;
  private stopping = false;
  private client: GatewayClient | undefined;
  private stream: Stream | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  /** Aborted by stop(): ends every wait and every request to the service at once. */
  private readonly stopped = new AbortController();
  private sequence = 0;
  private probeServer: Server | undefined;
  private probeAddress = '';
  private probePort = 0;
  /** From the service's welcome; the probe listener proves with it that it is this agent. */
  private probeKey = '';
  /** The id the service deleted, sent with the next enrollment so it comes back as pending. */
  private previousWorkerId: string | undefined;
  /** Which of the servers' addresses the next stream goes to. */
  private readonly candidates = new Rotation<Candidate>(candidateTarget);
  /** The TLS session offered at the next connect (tls-session.ts). */
  private readonly tlsSessions = new TlsSessionStore();

  constructor(
    private readonly options: AgentOptions,
    private readonly log: Logger,
  ) {
    // Before anything is written there: earlier versions left ca.pem, cert.pem and the services'
    // pid and output files (which may print secrets) readable by every local user.
    const repaired = repairDataDir(options.dataDir, DATA_DIR_ENTRIES);
    if (repaired > 0)
      log.warn(
        { data_dir: options.dataDir, entries: repaired },
        'made files and directories in the data directory private to the agent user',
      );
    this.store = new IdentityStore(options.dataDir);
    this.enrollment = new Enrollment(options, this.store, log, this.stopped.signal, (ms) => this.sleep(ms));
    this.dockerSocket = options.dockerSocket ?? defaultDockerSocket(options.env.DOCKER_HOST);
    // What the services write goes to the service's log store (the process driver reads it); a
    // docker stack's container output goes to its own log store through the shipper.
    const output = new ServiceOutput();
    let driver: Driver;
    let shipper: LogShipper | undefined;
    if (options.driver === 'docker') {
      const docker = new DockerDriver({
        socketPath: this.dockerSocket,
        log,
        ulimits: options.dockerUlimits ? parseUlimits(options.dockerUlimits) : undefined,
        allowHostPaths: options.allowHostPaths,
      });
      driver = docker;
      shipper = new LogShipper(docker.logSource(), log.child({ component: 'log-shipper' }));
    } else
      driver = new ProcessDriver(options.dataDir, log, options.env.PATH, (stackId, service, stream, line) =>
        output.line(stackId, service, stream, line),
      );
    this.runner = new JobRunner(driver, options.dataDir, log, options.env, output, shipper);
  }

  /** Runs until stop() or a fatal error; the probe listener closes either way. */
  async run(): Promise<void> {
    try {
      await this.runner.restore();
      await this.loop();
    } finally {
      this.probeServer?.close();
      await this.runner.close();
    }
  }

  private async loop(): Promise<void> {
    if (this.options.probe) {
      const { server, port } = await startProbeListener(
        this.options.probe.host,
        this.options.probe.port,
        // Without a key (an older service) the listener echoes, as it used to.
        (challenge) => (this.probeKey ? probeAnswer(this.probeKey, challenge) : challenge),
      );
      this.probeServer = server;
      this.probePort = port;
      // Only older services read the host; newer ones probe the address they know for this agent.
      this.probeAddress = `${this.options.address ?? primaryAddress()}:${port}`;
      this.log.info({ probe_address: this.probeAddress }, 'probe listener up');
    }
    const backoff = new Backoff(AGENT_MIN_BACKOFF_MS, AGENT_MAX_BACKOFF_MS);
    while (!this.stopping) {
      let identity = this.store.load();
      if (!identity) {
        try {
          identity = await this.enrollment.enroll(this.previousWorkerId);
          backoff.reset();
        } catch (err) {
          if (err instanceof FatalAgentError) throw err;
          if (this.stopping) break;
          // Rate limited, a 5xx or no network: try again later (at the next --server), like a lost
          // connection.
          const delay = backoff.failed(this.options.servers.length);
          this.log.warn({ err: (err as Error).message, delay_ms: delay }, 'enrollment failed; retrying');
          await this.sleep(delay);
          continue;
        }
      }
      if (!identity.certPem) identity = await this.enrollment.awaitApproval(identity);
      if (this.stopping) break;
      const { candidate, count } = await this.nextCandidate(identity);
      if (this.stopping) break;
      const { outcome, welcomed } = await this.session(identity, candidate);
      // Whatever ended the stream, the next one goes to another server: the one it had may be gone.
      if (welcomed) this.candidates.settled();
      this.candidates.advance();
      // A stream that was up resets the backoff, so losing a replica costs at most its first step.
      if (welcomed) backoff.reset();
      if (outcome === 'revoked') {
        this.log.warn({ worker_id: identity.workerId }, 'the service revoked this identity; enrolling again');
        this.previousWorkerId = identity.workerId;
        this.store.wipe();
        this.tlsSessions.clear();
        backoff.reset();
        continue;
      }
      if (outcome === 'renewed' || outcome === 'healthy-close') {
        backoff.reset();
        continue;
      }
      const delay = backoff.failed(count);
      this.log.info({ delay_ms: delay }, 'reconnecting');
      await this.sleep(delay);
    }
  }

  stop(): void {
    this.stopping = true;
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.renewTimer);
    try {
      this.stream?.end();
    } catch {
      // already closed
    }
    this.client?.close();
    this.probeServer?.close();
    this.stopped.abort();
  }

  /**
   * Where the next stream goes: the endpoints (--agent-endpoint, else what the service advertised),
   * each name resolved to all its addresses now, so a name that follows the replicas (a headless
   * Service, round-robin DNS) is read afresh every round.
   */
  private async nextCandidate(identity: Identity): Promise<{ candidate: Candidate; count: number }> {
    const endpoints = this.options.agentEndpoints ?? storedEndpoints(identity.agentEndpoint);
    if (endpoints.length === 0)
      throw new FatalAgentError(
        `the agent endpoint in identity.json (${JSON.stringify(identity.agentEndpoint)}) is not host:port; give --agent-endpoint`,
      );
    const { candidates, unresolved } = await resolveCandidates(endpoints);
    for (const { endpoint, error } of unresolved)
      this.log.warn({ endpoint, err: error }, 'cannot resolve a server name');
    const candidate = this.candidates.pick(candidates);
    this.log.info(
      {
        endpoint: candidateEndpoint(candidate),
        address: candidateTarget(candidate),
        candidates: candidates.length,
      },
      'connecting',
    );
    return { candidate, count: candidates.length };
  }

  /** One connection: resolves with why it ended, and whether the service welcomed it. */
  private session(
    identity: Identity,
    candidate: Candidate,
  ): Promise<{ outcome: Outcome; welcomed: boolean }> {
    // The last session of this certificate is offered: after a service restart, or on another
    // replica, the handshake resumes it rather than verifying certificates again.
    const credentials = new ResumingCredentials(
      Buffer.from(identity.caPem),
      Buffer.from(identity.keyPem),
      identity.certPem!,
      this.tlsSessions,
    );
    const client = new this.proto.AgentGateway(candidateTarget(candidate), credentials, {
      ...channelOptions(candidate),
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
      // The gateway's limits, so a message one side may send the other accepts.
      'grpc.max_receive_message_length': MAX_AGENT_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_AGENT_MESSAGE_BYTES,
    }) as unknown as GatewayClient;
    this.client = client;
    const stream = client.Connect();
    this.stream = stream;
    const endpoint = candidateEndpoint(candidate);
    let welcomed = false;
    let outcome: Outcome = 'failed';

    return new Promise((resolve) => {
      // A stream not welcomed in time is given up for the next server: an address that drops
      // packets would otherwise hold the agent for the whole TCP connect timeout.
      const welcomeTimer = setTimeout(() => {
        this.log.warn(
          { endpoint, address: candidateTarget(candidate), timeout_ms: AGENT_WELCOME_TIMEOUT_MS },
          'no answer from the server; trying the next one',
        );
        stream.cancel();
      }, AGENT_WELCOME_TIMEOUT_MS);
      const done = () => {
        clearTimeout(welcomeTimer);
        clearInterval(this.heartbeatTimer);
        clearTimeout(this.renewTimer);
        client.close();
        if (this.stream === stream) this.stream = undefined;
        this.runner.detach();
        resolve({ outcome, welcomed });
      };
      stream.on('data', (message: ServerMessage) => {
        if (message.welcome) {
          welcomed = true;
          clearTimeout(welcomeTimer);
          this.probeKey = message.welcome.probe_key;
          this.log.info(
            {
              worker_id: identity.workerId,
              status: message.welcome.status,
              endpoint,
              address: candidateTarget(candidate),
              tls_resumed: this.tlsSessions.lastResumed,
            },
            'connected',
          );
          this.runner.attach((msg) => {
            if (this.stream !== stream) return false;
            stream.write(msg);
            return true;
          });
          this.startHeartbeats(stream, message.welcome.heartbeat_interval_ms);
          this.scheduleRenewal(identity, client, () => {
            outcome = 'renewed';
            stream.end();
          });
        } else if (message.probe) {
          const request = message.probe;
          Promise.all(
            request.targets.slice(0, 1000).map((target) => probe(target, request.timeout_ms || 2000)),
          )
            .then((results) => {
              if (this.stream === stream)
                stream.write({ connectivity: { probe_id: request.probe_id, results } });
            })
            .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'probe round failed'));
        } else if (message.job) {
          this.runner.handle(message.job);
        } else if (message.cancel_job) {
          this.runner.cancel(message.cancel_job);
        } else if (message.disconnect) {
          this.log.warn({ reason: message.disconnect.reason }, 'the service closed the stream');
          if (message.disconnect.reason === IDENTITY_REVOKED) outcome = 'revoked';
          else if (outcome === 'failed') outcome = welcomed ? 'healthy-close' : 'failed';
        }
      });
      stream.on('error', (err: grpc.ServiceError) => {
        if (err.code === grpc.status.UNAUTHENTICATED && err.details.includes(IDENTITY_REVOKED))
          outcome = 'revoked';
        if (!this.stopping && outcome !== 'renewed')
          this.log.warn({ code: err.code, details: err.details, endpoint }, 'stream error');
        done();
      });
      stream.on('end', done);
      stream.write({
        hello: {
          worker_id: identity.workerId,
          version: this.options.version,
          hostname: hostname(),
          driver: this.options.driver,
          probe_address: this.probeAddress,
          probe_port: this.probePort,
          cpu_cores: cpus().length,
          memory_bytes: totalmem(),
          active_job_ids: this.runner.activeJobIds(),
          // Binds only exist on docker; a process agent allows none.
          allowed_host_paths: this.options.driver === 'docker' ? (this.options.allowHostPaths ?? []) : [],
        },
      });
    });
  }

  private startHeartbeats(stream: Stream, intervalMs: number): void {
    clearInterval(this.heartbeatTimer);
    const beat = () => {
      const driverOk = this.options.driver === 'process' || existsSync(this.dockerSocket);
      stream.write({
        heartbeat: {
          sequence: ++this.sequence,
          metrics: nodeMetrics(this.cpu, this.options.dataDir, this.runner.servicesRunning),
          checks: agentChecks(this.options.dataDir, driverOk, driverOk ? '' : 'docker socket not found'),
        },
      });
      this.runner
        .report()
        .then((report) => {
          if (report && this.stream === stream) stream.write({ state: report });
        })
        .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'state report failed'));
    };
    beat();
    this.heartbeatTimer = setInterval(beat, Math.max(100, intervalMs));
  }

  /** At two thirds of the certificate's lifetime: a new key, a CSR, RenewCertificate, reconnect. */
  private scheduleRenewal(identity: Identity, client: GatewayClient, reconnect: () => void): void {
    const { notBefore, notAfter } = certificateValidity(identity.certPem!);
    const at = notBefore.getTime() + ((notAfter.getTime() - notBefore.getTime()) * 2) / 3;
    clearTimeout(this.renewTimer);
    const renew = async (): Promise<void> => {
      const { keyPem, csrPem } = await newKeyAndCsr(identity.workerId);
      // The session may have ended while the key was made: its successor renews.
      if (this.client !== client || this.stopping) return;
      client.RenewCertificate({ csr_pem: csrPem }, (err, res) => {
        if (err || !res) {
          this.log.warn(
            { code: err?.code, details: err?.details },
            'certificate renewal failed; retrying in 30 s',
          );
          if (this.client === client) {
            this.renewTimer = setTimeout(() => this.scheduleRenewal(identity, client, reconnect), 30_000);
          }
          return;
        }
        this.store.save({ ...identity, keyPem, certPem: res.certificate_pem, caPem: res.ca_certificate_pem });
        this.log.info({ worker_id: identity.workerId, not_after: res.not_after }, 'certificate renewed');
        reconnect();
      });
    };
    this.renewTimer = setTimeout(
      () => {
        // A closed channel throws synchronously; never let that take the agent down.
        renew().catch((err: unknown) =>
          this.log.warn({ err: (err as Error).message }, 'certificate renewal failed'),
        );
      },
      Math.max(0, Math.min(at - Date.now(), 2 ** 31 - 1)),
    );
  }

  /** Waits `ms`, or less when the agent stops (also when it stopped before the wait began). */
  private sleep(ms: number): Promise<void> {
    const signal = this.stopped.signal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
    });
  }
}

/**
 * A candidate resolved from a name is dialled at its IP, but the server's certificate is checked
 * against the name (and it goes in SNI and :authority), exactly as if the name had been dialled.
 */
export function channelOptions(candidate: Candidate): grpc.ChannelOptions {
  if (candidate.address === candidate.name) return {};
  return {
    'grpc.ssl_target_name_override': candidate.name,
    'grpc.default_authority': formatEndpoint({ host: candidate.name, port: candidate.port }),
  };
}

/** The first non-internal IPv4 address, else the hostname. */
function primaryAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return hostname();
}
