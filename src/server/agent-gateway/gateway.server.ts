import * as grpc from '@grpc/grpc-js';
import { Injectable, Logger, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import { HealthImplementation } from 'grpc-health-check';
import { performance } from 'node:perf_hooks';
import type { Counter, Histogram } from 'prom-client';
import type { SecureContextOptions } from 'node:tls';
import {
  IDENTITY_REVOKED,
  loadAgentProto,
  servedAgentGateway,
  type AgentMessage,
  type RenewCertificateRequest,
  type RenewCertificateResponse,
  type ServerMessage,
} from '../../contracts/agent-protocol/index.js';
import { MAX_AGENT_MESSAGE_BYTES } from '../../contracts/agent-protocol/limits.js';
import { AGENT_WELCOME_TIMEOUT_MS } from '../../contracts/agent-protocol/reconnect.js';
import { AppError } from '../common/app-error.js';
import { StartupState } from '../common/startup-state.js';
import { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import { AppConfig } from '../config/config.js';
import { grpcStatusFor } from './agent-gateway.errors.js';
import { logAgentMessage } from './message-log.js';
import { AgentSessions } from './agent-sessions.js';
import { CertificatesService } from './certificates.service.js';
import { CaService } from './ca.service.js';
import { peerHost } from './peer-address.js';
import { SecretBox } from '../common/secret-box.js';
import { ticketOptions, ticketPeriod } from './tls-tickets.js';
import { Admission } from './admission.js';
import { ConnectionGate } from './connection-gate.js';
import { METRIC } from '../metrics/metric-names.js';

const SERVICE_NAME = 'stack.agent.v1.AgentGateway';
/** An agent that says nothing for this long after connecting is dropped. */
const HELLO_TIMEOUT_MS = 10_000;
/** Accepted agent connections that may wait for a turn (connection-gate.ts); more are closed. */
const CONNECT_QUEUE = 20_000;
/**
 * An agent gives up on a stream not welcomed within AGENT_WELCOME_TIMEOUT_MS (15 s): a connection
 * that waited that less 3 s (a handshake and hello under load take up to a second or two) is closed.
 */
const CONNECT_MAX_WAIT_MS = AGENT_WELCOME_TIMEOUT_MS - 3_000;
/**
 * A turn ends after this even without a welcome: a handshake and hello take milliseconds, so a
 * connection still at it waits on its client (a stalled or vanished agent), not on us.
 */
const CONNECT_HOLD_MS = 2_000;
/**
 * On shutdown, once every stream has its goodbye, the agents get this long to close their ends;
 * the rest are cut. The goodbye leaves in milliseconds; what the grace waits on is each agent
 * closing its connection, and a fleet of thousands busy redialling took over 2 s to (the old
 * limit), while the port stayed down. An agent cut off redials after its backoff's first step.
 */
const SHUTDOWN_GRACE_MS = 300;
/** Streams one agent connection may hold at once: its Connect stream and the odd renewal. */
const MAX_CONCURRENT_STREAMS = 8;

/**
 * grpc-js credentials with the TLS options `createSsl` does not expose: TLS 1.3 only, and a client
 * certificate required and verified against our CA during the handshake (`rejectUnauthorized`), so
 * a missing or foreign certificate never reaches a handler. Session tickets shared by every replica
 * and restart (tls-tickets.ts) let a reconnecting agent resume: its certificate, verified in the
 * full handshake, is kept in the ticket and reaches `identify` again, which checks it as ever.
 */
class MutualTls13Credentials extends grpc.ServerCredentials {
  constructor(context: SecureContextOptions, streamWindow: number) {
    super(
      {
        requestCert: true,
        rejectUnauthorized: true,
        minVersion: 'TLSv1.3',
        // These replace the settings grpc-js derives from its options: the stream limit again, and
        // the window an agent's uploads get (AGENT_STREAM_WINDOW). A burst fills Node's 64 KiB TLS
        // read buffer for good only as far as the window lets it (docs/benchmarks.md, session 27).
        settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, initialWindowSize: streamWindow },
      },
      context,
    );
  }

  _equals(other: grpc.ServerCredentials): boolean {
    return other === this;
  }

  /** New context options (a new ticket key) for the connections accepted from now on. */
  update(context: SecureContextOptions): void {
    this.updateSecureContextOptions(context);
  }
}

interface PeerIdentity {
  workerId: string;
  serial: string;
}

/** The agent port: mutual TLS, one Connect stream per agent, certificate renewal, grpc.health.v1. */
@Injectable()
export class GatewayServer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('agent-gateway');
  private server: grpc.Server | undefined;
  private readonly health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE_NAME]: 'NOT_SERVING' });
  /** The port actually bound (AGENT_PORT, or the one the OS chose for 0). */
  port = 0;
  private rotation: NodeJS.Timeout | undefined;
  /** Hellos served at once (AGENT_HELLO_CONCURRENCY); the rest wait in order. */
  private readonly admission: Admission;
  private gate: ConnectionGate | undefined;
  /** Hands the gate's connections to grpc-js, and ends them (`drain`) on shutdown. */
  private injector: ReturnType<grpc.Server['createConnectionInjector']> | undefined;
  /** PUBLIC_URL's host, parsed once: `endpoint` is read by every /info request. */
  private readonly publicHost: string;

  constructor(
    private readonly ca: CaService,
    private readonly certificates: CertificatesService,
    private readonly sessions: AgentSessions,
    private readonly startup: StartupState,
    private readonly config: AppConfig,
    private readonly box: SecretBox,
    health: OrchestratorHealthService,
    @InjectMetric(METRIC.agentConnectSeconds) private readonly connectSeconds: Histogram<string>,
    @InjectMetric(METRIC.agentConnectionsRefused) private readonly refusedConnections: Counter<string>,
  ) {
    this.admission = new Admission(config.agentHelloConcurrency);
    this.publicHost = new URL(config.publicUrl).hostname;
    startup.expectListener('grpc');
    health.registerCheck('grpc', () => (this.listening ? 'ok' : 'not_listening'));
    health.registerAgentEndpoint(() => this.endpoint);
  }

  /** host:port agents dial: PUBLIC_URL's host and the port bound. */
  get endpoint(): string {
    return `${this.publicHost}:${this.port || this.config.agentPort}`;
  }

  /**
   * Agents wait for admission here now: connections queued at the gate, or hellos queued for a
   * turn. The unreachable sweep holds off while any replica has such a backlog (workers.service.ts).
   */
  get backlogged(): boolean {
    return (this.gate?.queued ?? 0) > 0 || this.admission.queued > 0;
  }

  get listening(): boolean {
    return this.server !== undefined && this.port > 0;
  }

  async onApplicationBootstrap(): Promise<void> {
    // Agents may dial through the tunnel or any of AGENT_ENDPOINTS (they check the name they were
    // given, also when it resolved to an IP): each of those hosts must be in the certificate too.
    const tunnel = this.config.tunnel;
    const tunnelHosts = [tunnel.agentHost, tunnel.ssh.host].filter((h): h is string => !!h);
    const endpointHosts = this.config.agentEndpoints.map((e) => e.host);
    const hosts = [
      ...new Set([
        new URL(this.config.publicUrl).hostname,
        'localhost',
        '127.0.0.1',
        ...tunnelHosts,
        ...endpointHosts,
      ]),
    ];
    const { certPem, keyPem } = await this.ca.issueServerCertificate(hosts);
    // Before the port opens: a fleet reconnecting after a restart finds its certificates known.
    await this.certificates.warm();
    const server = new grpc.Server({
      // Channelz keeps per-connection bookkeeping (socket refs, call counters, trace events) for an
      // admin service we do not expose: about 1 KiB of V8 heap per agent, and a counter update per
      // message (docs/benchmarks.md, "Memory per connected agent").
      'grpc.enable_channelz': 0,
      'grpc.keepalive_time_ms': 60_000,
      'grpc.keepalive_timeout_ms': 20_000,
      // An agent needs one stream and the odd renewal.
      'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS,
      // The agent sets the same limits: a message over them ends the stream, so nothing accepted
      // may need one (agent-protocol/limits.ts).
      'grpc.max_receive_message_length': MAX_AGENT_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_AGENT_MESSAGE_BYTES,
    });
    const proto = loadAgentProto();
    server.addService(servedAgentGateway(proto), {
      Connect: (stream: grpc.ServerDuplexStream<AgentMessage, ServerMessage>) => this.connect(stream),
      RenewCertificate: (
        call: grpc.ServerUnaryCall<RenewCertificateRequest, RenewCertificateResponse>,
        callback: grpc.sendUnaryData<RenewCertificateResponse>,
      ) => void this.renew(call, callback),
    });
    this.health.addToServer(server);
    const context = (at: number) => ({
      ca: Buffer.from(this.ca.caPem),
      cert: Buffer.from(certPem),
      key: Buffer.from(keyPem),
      ...ticketOptions(this.box, at),
    });
    const credentials = new MutualTls13Credentials(context(Date.now()), this.config.agentStreamWindow);
    // A new ticket key at each period's start, on every replica alike (the wall clock's period).
    let current = ticketPeriod(Date.now()).period;
    const rotate = () => {
      const { endsAt } = ticketPeriod(Date.now());
      this.rotation = setTimeout(
        () => {
          const now = Date.now();
          if (ticketPeriod(now).period !== current) {
            current = ticketPeriod(now).period;
            credentials.update(context(now));
          }
          rotate();
        },
        // At most a day at a time (setTimeout's limit is under 25 days); a few ms past the start.
        Math.min(86_400_000, endsAt - Date.now() + 10),
      );
      this.rotation.unref();
    };
    rotate();
    // Our own listener admits connections in turn (connection-gate.ts) and hands them to grpc-js.
    const injector = server.createConnectionInjector(credentials);
    this.injector = injector;
    this.gate = new ConnectionGate(
      {
        inFlight: this.config.agentConnectConcurrency,
        queue: CONNECT_QUEUE,
        maxWaitMs: CONNECT_MAX_WAIT_MS,
        holdMs: CONNECT_HOLD_MS,
      },
      (socket) => injector.injectConnection(socket),
      {
        admitted: (seconds) => this.connectSeconds.observe({ phase: 'queued' }, seconds),
        refused: (reason) => this.refusedConnections.inc({ reason }),
      },
    );
    this.port = await this.gate.listen(this.config.host, this.config.agentPort);
    this.server = server;
    this.health.setStatus('', 'SERVING');
    this.health.setStatus(SERVICE_NAME, 'SERVING');
    this.startup.markListening('grpc');
    this.logger.log({ port: this.port }, 'agent gateway listening (mTLS, TLS 1.3)');
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearTimeout(this.rotation);
    const server = this.server;
    if (!server) return;
    this.health.setStatus('', 'NOT_SERVING');
    this.health.setStatus(SERVICE_NAME, 'NOT_SERVING');
    this.sessions.closeAll('service shutting down');
    this.gate?.close();
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        // forceShutdown alone leaves the connections it got from the injector open when channelz
        // is off (it destroys only the sessions channelz tracks): drain(0) cuts them.
        this.injector?.drain(0);
        server.forceShutdown();
        resolve();
      }, SHUTDOWN_GRACE_MS);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    this.server = undefined;
    this.injector = undefined;
  }

  private async identify(
    call: Pick<grpc.ServerUnaryCall<unknown, unknown>, 'getAuthContext'>,
    { fresh = false } = {},
  ): Promise<PeerIdentity> {
    const peer = call.getAuthContext().sslPeerCertificate;
    const cn = peer?.subject?.CN;
    const workerId = Array.isArray(cn) ? undefined : cn;
    const serial = peer?.serialNumber;
    if (!workerId || !serial)
      throw new AppError(401, 'unauthorized', 'Unauthorized', 'no client certificate');
    if (!(await this.certificates.isValid(serial, workerId, { fresh }))) {
      throw new AppError(401, 'unauthorized', 'Unauthorized', IDENTITY_REVOKED);
    }
    return { workerId, serial };
  }

  private connect(stream: grpc.ServerDuplexStream<AgentMessage, ServerMessage>): void {
    let workerId: string | undefined;
    let closed = false;
    // The connection's turn at the gate ends with its welcome, or with the stream.
    const peerAddress = stream.getPeer();
    const settle = () => this.gate?.settled(peerAddress);
    const admittedAt = this.gate?.admittedAt(peerAddress);
    if (admittedAt !== undefined)
      this.connectSeconds.observe({ phase: 'handshake' }, (performance.now() - admittedAt) / 1000);
    const fail = (err: unknown) => {
      if (closed) return;
      closed = true;
      settle();
      const code = grpcStatusFor(err);
      const details = err instanceof AppError ? err.message : 'internal error';
      if (code === grpc.status.INTERNAL)
        this.logger.error({ err, worker_id: workerId }, 'agent stream failed');
      stream.emit('error', { code, details });
    };
    const helloTimer = setTimeout(
      () => fail(new AppError(400, 'bad_request', 'Bad Request', 'no hello')),
      HELLO_TIMEOUT_MS,
    );
    const identity = this.identify(stream);
    identity.catch(fail);
    stream.on('data', (message: AgentMessage) => {
      void identity
        .then(async (peer) => {
          if (closed) return;
          logAgentMessage(this.logger, 'received', peer.workerId, message);
          const events = this.sessions.workersHandler();
          if (workerId === undefined) {
            if (!message.hello)
              throw new AppError(400, 'bad_request', 'Bad Request', 'the first message must be hello');
            if (message.hello.worker_id !== peer.workerId) {
              throw new AppError(
                403,
                'forbidden',
                'Forbidden',
                'hello names another worker than the certificate',
              );
            }
            clearTimeout(helloTimer);
            const helloAt = performance.now();
            // In turn with the other hellos; one whose agent gave up while it waited costs nothing.
            const release = await this.admission.acquire();
            let welcome: Awaited<ReturnType<typeof events.hello>>;
            try {
              if (closed) return;
              // Where this authenticated stream comes from: peers probe the agent there.
              welcome = await events.hello(peer.workerId, message.hello, {
                remoteHost: peerHost(peerAddress),
              });
            } finally {
              release();
            }
            if (closed) {
              // The agent went away while we looked it up: do not keep a dead stream.
              events.disconnected(peer.workerId);
              return;
            }
            workerId = peer.workerId;
            this.sessions.register(workerId, stream);
            this.sessions.send(workerId, {
              welcome: {
                worker_id: workerId,
                heartbeat_interval_ms: this.config.heartbeatIntervalMs,
                status: welcome.status,
                probe_key: welcome.probeKey,
              },
            });
            this.sessions.connected(workerId, message.hello);
            this.connectSeconds.observe({ phase: 'hello' }, (performance.now() - helloAt) / 1000);
            settle();
            return;
          }
          if (message.heartbeat) {
            events.heartbeat(workerId, message.heartbeat);
            // An agent that does not read its acks gets none rather than growing our buffers.
            if (!stream.writableNeedDrain)
              this.sessions.send(workerId, { heartbeat_ack: { sequence: message.heartbeat.sequence } });
          } else if (message.connectivity) events.connectivity(workerId, message.connectivity);
          else if (message.job_event) {
            this.sessions.jobEvent(workerId, message.job_event);
          } else if (message.state) {
            this.sessions.stateReport(workerId, message.state);
          } else if (message.scrape) {
            this.sessions.scrape(workerId, message.scrape);
          } else if (message.output) {
            this.sessions.output(workerId, message.output);
          }
        })
        .catch(fail);
    });
    const finish = () => {
      clearTimeout(helloTimer);
      closed = true;
      settle();
      if (workerId !== undefined && this.sessions.unregister(workerId, stream)) {
        this.sessions.disconnected(workerId);
      }
    };
    stream.on('end', () => {
      finish();
      stream.end();
    });
    stream.on('cancelled', finish);
    stream.on('error', finish);
    stream.on('close', finish);
  }

  private async renew(
    call: grpc.ServerUnaryCall<RenewCertificateRequest, RenewCertificateResponse>,
    callback: grpc.sendUnaryData<RenewCertificateResponse>,
  ): Promise<void> {
    try {
      // Before signing: the database's word, not what this replica remembers.
      const peer = await this.identify(call, { fresh: true });
      const issued = await this.certificates.renew(peer.workerId, call.request.csr_pem);
      this.logger.log(
        { worker_id: peer.workerId, not_after: issued.notAfter.toISOString() },
        'certificate renewed',
      );
      callback(null, {
        certificate_pem: issued.pem,
        ca_certificate_pem: this.ca.caPem,
        not_after: issued.notAfter.toISOString(),
      });
    } catch (err) {
      callback({
        code: grpcStatusFor(err),
        details: err instanceof AppError ? err.message : 'internal error',
      });
    }
  }
}
