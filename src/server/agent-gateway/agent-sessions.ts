import { Injectable, Logger } from '@nestjs/common';
import { logAgentMessage } from './message-log.js';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type {
  AgentMessage,
  ConnectivityReportMsg,
  HeartbeatMsg,
  HelloMsg,
  JobEventMsg,
  ScrapeReportMsg,
  ServerMessage,
  ServiceOutputMsg,
  StateReportMsg,
} from '../../contracts/agent-protocol/index.js';

/** What the gateway knows of an agent's connection beyond its messages. */
export interface AgentConnection {
  /** The IP address the stream comes from, when the socket has one. */
  remoteHost: string | undefined;
}

/** What the workers feature does with what agents say; it registers itself at start. */
export interface AgentEventsHandler {
  /**
   * Accepts (or refuses, by throwing an AppError) a connecting agent; returns the welcome status and
   * the agent's probe key for this connection.
   */
  hello(
    workerId: string,
    hello: HelloMsg,
    connection: AgentConnection,
  ): Promise<{ status: string; probeKey: string }>;
  heartbeat(workerId: string, heartbeat: HeartbeatMsg): void;
  connectivity(workerId: string, report: ConnectivityReportMsg): void;
  disconnected(workerId: string): void;
}

/** What the jobs and stacks features do with the work-related messages of an agent. */
export interface AgentWorkHandler {
  /** After the workers feature accepted the agent and its stream is registered. */
  connected(workerId: string, hello: HelloMsg): void;
  jobEvent(workerId: string, event: JobEventMsg): void;
  disconnected(workerId: string): void;
}

/** Receives the agents' state reports (service health, drift). */
export interface AgentStateHandler {
  state(workerId: string, report: StateReportMsg): void;
  disconnected(workerId: string): void;
}

/** Receives the stacks' scrapes and service output the agents send (the stack monitoring feature). */
export interface AgentMonitoringHandler {
  scrape(workerId: string, report: ScrapeReportMsg): void;
  output(workerId: string, output: ServiceOutputMsg): void;
}

type Stream = ServerDuplexStream<AgentMessage, ServerMessage>;

/** A set of worker ids in brief: see `AgentSessions.fingerprint`. */
export interface IdsFingerprint {
  count: number;
  head: number;
  tail: number;
}

/**
 * A worker id's first and last 32 bits (8 hex digits each) as signed integers, as PostgreSQL's
 * `('x' || left(id::text, 8))::bit(32)::int` reads them. Sums of up to 2^21 of them stay exact.
 */
export function idBits(id: string): [number, number] {
  return [parseInt(id.slice(0, 8), 16) | 0, parseInt(id.slice(-8), 16) | 0];
}

/** The live agent streams of this replica, one per worker. */
@Injectable()
export class AgentSessions {
  private readonly logger = new Logger('agent-gateway');
  private readonly streams = new Map<string, Stream>();
  /** The sums of the stream ids' first and last 32 bits (`idBits`), kept as streams come and go. */
  private head = 0;
  private tail = 0;
  private handler: AgentEventsHandler | undefined;
  private readonly workHandlers: AgentWorkHandler[] = [];
  private readonly stateHandlers: AgentStateHandler[] = [];
  private monitoringHandler: AgentMonitoringHandler | undefined;

  setHandler(handler: AgentEventsHandler): void {
    this.handler = handler;
  }

  addWorkHandler(handler: AgentWorkHandler): void {
    this.workHandlers.push(handler);
  }

  addStateHandler(handler: AgentStateHandler): void {
    this.stateHandlers.push(handler);
  }

  setMonitoringHandler(handler: AgentMonitoringHandler): void {
    this.monitoringHandler = handler;
  }

  /** Hands a scrape to the stack monitoring feature (dropped when none is registered). */
  scrape(workerId: string, report: ScrapeReportMsg): void {
    this.monitoringHandler?.scrape(workerId, report);
  }

  /** Hands service output lines to the stack monitoring feature. */
  output(workerId: string, output: ServiceOutputMsg): void {
    this.monitoringHandler?.output(workerId, output);
  }

  /** The workers feature: hello, heartbeats, connectivity reports. */
  workersHandler(): AgentEventsHandler {
    if (!this.handler) throw new Error('no agent events handler registered');
    return this.handler;
  }

  /** Hands a job event to the features that run jobs. */
  jobEvent(workerId: string, event: JobEventMsg): void {
    for (const handler of this.workHandlers) handler.jobEvent(workerId, event);
  }

  /** Hands a state report to the features that read the nodes' state (health, drift). */
  stateReport(workerId: string, report: StateReportMsg): void {
    for (const handler of this.stateHandlers) handler.state(workerId, report);
  }

  /** After the workers feature accepted an agent and its stream is registered. */
  connected(workerId: string, hello: HelloMsg): void {
    for (const handler of this.workHandlers) handler.connected(workerId, hello);
  }

  /** A registered stream ended: the workers feature and every feature with live state are told. */
  disconnected(workerId: string): void {
    this.workersHandler().disconnected(workerId);
    this.notifyGone(workerId);
  }

  /** The jobs, stacks and drift features forget the worker's live state. */
  private notifyGone(workerId: string): void {
    for (const handler of this.workHandlers) handler.disconnected(workerId);
    for (const handler of this.stateHandlers) handler.disconnected(workerId);
  }

  /** Takes the worker's stream; an older stream of the same worker is closed. */
  register(workerId: string, stream: Stream): void {
    const previous = this.streams.get(workerId);
    this.put(workerId, stream);
    if (previous && previous !== stream) this.end(previous, 'replaced by a newer connection', workerId);
  }

  /** Forgets the stream if it is still the worker's current one; true when it was. */
  unregister(workerId: string, stream: Stream): boolean {
    if (this.streams.get(workerId) !== stream) return false;
    this.drop(workerId);
    return true;
  }

  send(workerId: string, message: ServerMessage): boolean {
    const stream = this.streams.get(workerId);
    if (!stream) return false;
    logAgentMessage(this.logger, 'sent', workerId, message);
    stream.write(message);
    return true;
  }

  /** Closes the worker's live stream (deletion, revocation). */
  close(workerId: string, reason: string): void {
    const stream = this.streams.get(workerId);
    if (!stream) return;
    this.drop(workerId);
    this.end(stream, reason, workerId);
    // The workers feature closes streams itself (deletion, revocation): the others are told.
    this.notifyGone(workerId);
    this.logger.log({ worker_id: workerId, reason }, 'agent stream closed');
  }

  /**
   * Closes the worker's stream because the agent now holds one on another replica: every feature
   * forgets it as on a disconnect.
   */
  handOver(workerId: string, reason: string): void {
    const stream = this.streams.get(workerId);
    if (!stream) return;
    this.drop(workerId);
    this.end(stream, reason, workerId);
    this.disconnected(workerId);
  }

  isConnected(workerId: string): boolean {
    return this.streams.has(workerId);
  }

  get count(): number {
    return this.streams.size;
  }

  connectedIds(): string[] {
    return [...this.streams.keys()];
  }

  /** The ids of the streams held now, without a copy (not to be held across an await). */
  ids(): IterableIterator<string> {
    return this.streams.keys();
  }

  /**
   * The streams' ids summed up: how many, and the sums of their first and last 32 bits. Equal to
   * `idsFingerprint` of a set of ids, the set is these streams' (SessionDirectory's check of its rows).
   */
  fingerprint(): IdsFingerprint {
    return { count: this.streams.size, head: this.head, tail: this.tail };
  }

  private put(workerId: string, stream: Stream): void {
    if (!this.streams.has(workerId)) {
      const [head, tail] = idBits(workerId);
      this.head += head;
      this.tail += tail;
    }
    this.streams.set(workerId, stream);
  }

  private drop(workerId: string): void {
    if (!this.streams.delete(workerId)) return;
    const [head, tail] = idBits(workerId);
    this.head -= head;
    this.tail -= tail;
  }

  closeAll(reason: string): void {
    for (const [workerId, stream] of this.streams) {
      this.drop(workerId);
      this.end(stream, reason, workerId);
    }
  }

  private end(stream: Stream, reason: string, workerId: string): void {
    try {
      logAgentMessage(this.logger, 'sent', workerId, { disconnect: { reason } });
      stream.write({ disconnect: { reason } });
      stream.end();
    } catch {
      // already gone
    }
  }
}
