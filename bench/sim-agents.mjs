// Simulated agents in a forked process (bench/dispatch.mjs, bench/replicas.mjs): each a real grpc-js
// client with its own certificate and its own TLS connection, holding the Connect stream. Like the
// real agent (src/agent/agent.ts) it heartbeats at once on `welcome` and then at the interval the
// service sets, and answers every `job` in the same tick with `accepted` and `succeeded`. With
// several endpoints, agent k starts at endpoint k mod n and, when its stream ends, goes to the next
// one after the real agent's backoff (`Backoff` from dist/agent, 500 ms floor, full jitter, reset
// by a welcome). Every heartbeat is timed until its `heartbeat_ack` inside a window. `client`:
// 'grpc' (grpc-js, the default) or 'http2' (bench/sim-http2.mjs: the same messages and TLS over
// node:http2 directly, a fraction of grpc-js' CPU per agent). Driven over IPC:
//   {type:'init', endpoints, caPem, capacity, reconnect, resume, client} -> {type:'ready'}
//   {type:'connect', agents:[{id,keyPem,certPem}], concurrency}
//                                               -> {type:'connected', ok, failed, connectMs, errors}
//   {type:'collect'}                            -> {type:'collected', received, jobs, duplicates, ...}
//   {type:'window-start'} / {type:'window-end'} -> {type:'window', sent, acked, latencies}
//   {type:'mark'}: forget the reconnections so far; {type:'reconnects'} -> {type:'reconnects', agents}
//     (each lost stream: when, its welcome again, the successful attempt's hello→welcome, attempts,
//     its first ack after); {type:'reconnects', summary: true} -> only the counts
//     With `profileDir` on both: a CPU profile of this process from the mark to the reconnects,
//     written there as agents-<pid>-<n>.cpuprofile.
//   {type:'stop'}                               -> {type:'stopped'}, then exit
// Times are CLOCK_MONOTONIC milliseconds (process.hrtime), the same clock in every process here.
import * as grpc from '@grpc/grpc-js';
import { hostname } from 'node:os';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Backoff } from '../dist/agent/server-addresses.js';
import { IDENTITY_REVOKED, loadAgentProto } from '../dist/contracts/agent-protocol/index.js';
import {
  AGENT_MAX_BACKOFF_MS as MAX_BACKOFF_MS,
  AGENT_MIN_BACKOFF_MS as MIN_BACKOFF_MS,
  AGENT_WELCOME_TIMEOUT_MS as WELCOME_TIMEOUT_MS,
} from '../dist/contracts/agent-protocol/reconnect.js';
import { heartbeatMessage, helloMessage, jobAnswers, now } from './lib-jobs.mjs';
import { agentTls, Http2Call } from './sim-http2.mjs';

const CONNECT_TIMEOUT_MS = 30_000;

const proto = loadAgentProto();
/** The Connect method: its path and the serializers grpc-js uses, for the http2 client too. */
const CONNECT = proto.AgentGateway.service.Connect;
/** This process's event-loop delay since the last `mark`: when it is large, the agents are the limit. */
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
const HOST = hostname();

let config = {
  endpoints: [],
  caPem: Buffer.alloc(0),
  capacity: undefined,
  reconnect: false,
  resume: false,
  client: 'grpc',
};
/** dist/agent/tls-session.js, loaded when resuming (a build from before it has none). */
let tlsSession;
const agents = [];
/** [job_id, t1, attempt] of every job command since the last collect. */
let received = [];
const finals = new Set();
const totals = { jobs: 0, duplicates: 0, disconnects: 0 };
const errors = new Map();
const noteError = (what) => errors.set(what, (errors.get(what) ?? 0) + 1);
/** The open heartbeat window, or null. */
let window = null;

function onJob(agent, job) {
  const t1 = now();
  totals.jobs++;
  // Dispatch is idempotent on the agent: a job it already has is confirmed and finished again.
  if (finals.has(job.job_id)) totals.duplicates++;
  else {
    finals.add(job.job_id);
    received.push([job.job_id, t1, job.attempt]);
  }
  for (const message of jobAnswers(job)) agent.stream.write(message);
}

function heartbeat(agent) {
  if (!agent.connected) return;
  const sequence = ++agent.seq;
  agent.pending.set(sequence, { t: now(), window });
  if (window) window.sent++;
  agent.stream.write(heartbeatMessage(sequence));
}

function onAck(agent, sequence) {
  const entry = agent.pending.get(sequence);
  if (!entry) return;
  agent.pending.delete(sequence);
  const t = now();
  if (agent.lost && agent.lost.ackAt === undefined) agent.lost.ackAt = t;
  if (entry.window && !entry.window.final) {
    entry.window.acked++;
    entry.window.latencies.push(t - entry.t);
  }
}

/**
 * The agent's channel credentials: as the real agent's (src/agent/tls-session.ts), offering its last
 * TLS session when it connects again, unless `resume: false` (plain createSsl, as agents before).
 * Built once per agent (the real agent builds them per connection, which costs only its own CPU).
 */
function credentialsOf(agent) {
  if (agent.credentials) return agent.credentials;
  const ca = config.caPem;
  const key = Buffer.from(agent.spec.keyPem);
  if (config.resume) {
    agent.tls = new tlsSession.TlsSessionStore({ keepPeerCertificate: config.fullSessions });
    agent.credentials = new tlsSession.ResumingCredentials(ca, key, agent.spec.certPem, agent.tls);
  } else agent.credentials = grpc.credentials.createSsl(ca, key, Buffer.from(agent.spec.certPem));
  return agent.credentials;
}

/** The TLS settings of `agent` for the http2 client, built once: as credentialsOf. */
function http2TlsOf(agent) {
  agent.http2Tls ??= agentTls({
    caPem: config.caPem,
    keyPem: Buffer.from(agent.spec.keyPem),
    certPem: agent.spec.certPem,
    store: config.resume
      ? (agent.tls = new tlsSession.TlsSessionStore({ keepPeerCertificate: config.fullSessions }))
      : undefined,
  });
  return agent.http2Tls;
}

/** A client and its Connect stream to `endpoint`: grpc-js, or the http2 call (client and stream). */
function dial(agent, endpoint) {
  if (config.client === 'http2') {
    const call = new Http2Call(endpoint, CONNECT, http2TlsOf(agent));
    return { client: call, stream: call };
  }
  const client = new proto.AgentGateway(
    endpoint,
    credentialsOf(agent),
    // Its own subchannel pool: one TLS connection per agent, as with agents on separate hosts.
    { 'grpc.use_local_subchannel_pool': 1, 'grpc.keepalive_time_ms': 30_000 },
  );
  return { client, stream: client.Connect() };
}

/** One stream of `agent` to its current endpoint; on its end, the next endpoint (when reconnecting). */
function open(agent) {
  const endpoint = config.endpoints[agent.endpoint % config.endpoints.length];
  const { client, stream } = dial(agent, endpoint);
  agent.client = client;
  agent.stream = stream;
  const started = now();
  if (agent.lost) agent.lost.attempts++;
  let welcomed = false;
  let ended = false;
  /** As the real agent: a service that says goodbye to a welcomed stream is dialled again at once. */
  let healthyClose = false;
  const welcomeTimer = setTimeout(() => stream.cancel(), WELCOME_TIMEOUT_MS);
  stream.on('data', (message) => {
    if (message.heartbeat_ack) onAck(agent, message.heartbeat_ack.sequence);
    else if (message.job) onJob(agent, message.job);
    else if (message.welcome) {
      welcomed = true;
      clearTimeout(welcomeTimer);
      agent.connected = true;
      agent.connectMs ??= now() - started;
      if (agent.lost && agent.lost.welcomeAt === undefined) {
        agent.lost.welcomeAt = now();
        agent.lost.helloMs = agent.lost.welcomeAt - started;
        agent.lost.resumed = agent.tls?.lastResumed === true;
        agent.lost.endpoint = endpoint;
      }
      agent.backoff.reset();
      // A first heartbeat at once: a worker becomes healthy (placeable) with its first report.
      heartbeat(agent);
      agent.timer = setInterval(() => heartbeat(agent), Math.max(100, message.welcome.heartbeat_interval_ms));
      agent.settle(true);
    } else if (message.disconnect) {
      noteError(`disconnect: ${message.disconnect.reason}`);
      if (welcomed && message.disconnect.reason !== IDENTITY_REVOKED) healthyClose = true;
    }
  });
  const done = (why) => {
    if (ended) return;
    ended = true;
    clearTimeout(welcomeTimer);
    clearInterval(agent.timer);
    client.close();
    if (agent.closing) return;
    noteError(why);
    if (agent.connected) {
      totals.disconnects++;
      agent.lost = { id: agent.spec.id, at: now(), from: endpoint, attempts: 0 };
    }
    agent.connected = false;
    agent.pending.clear();
    if (!config.reconnect) return agent.settle(false);
    agent.endpoint++;
    const delay = healthyClose ? 0 : agent.backoff.failed(config.endpoints.length);
    agent.retry = setTimeout(() => open(agent), delay);
  };
  stream.on('error', (err) => done(welcomed ? `stream error ${err.code}` : `connect error ${err.code}`));
  stream.on('end', () => done('stream ended by the service'));
  stream.write(helloMessage(agent.spec.id, HOST, config.capacity));
}

/** Resolves true at the agent's first welcome, false when it gives up or after CONNECT_TIMEOUT_MS. */
function connectAgent(spec) {
  return new Promise((resolve) => {
    const agent = {
      spec,
      endpoint: agents.length,
      backoff: new Backoff(MIN_BACKOFF_MS, MAX_BACKOFF_MS),
      connected: false,
      seq: 0,
      pending: new Map(),
      lost: undefined,
    };
    const timeout = setTimeout(() => {
      noteError('connect timeout');
      agent.settle(false);
    }, CONNECT_TIMEOUT_MS);
    let settled = false;
    agent.settle = (ok) => {
      if (settled) return;
      settled = true;
      clearTimeout(timeout);
      resolve(ok);
    };
    agents.push(agent);
    open(agent);
  });
}

function close(agent) {
  agent.closing = true;
  clearInterval(agent.timer);
  clearTimeout(agent.retry);
  try {
    agent.stream?.cancel();
  } catch {
    // already closed
  }
  agent.client?.close();
}

const connectedCount = () => agents.reduce((n, a) => n + (a.connected ? 1 : 0), 0);

/** The inspector session of a profile from `mark` to `reconnects` (profileDir), and how many were written. */
let profiler;
let profiles = 0;

async function handle(msg) {
  switch (msg.type) {
    case 'init':
      config = {
        endpoints: msg.endpoints,
        caPem: Buffer.from(msg.caPem),
        capacity: msg.capacity,
        reconnect: msg.reconnect === true,
        resume: msg.resume !== false,
        client: msg.client ?? 'grpc',
      };
      if (config.client !== 'grpc' && config.client !== 'http2')
        throw new Error(`unknown client ${msg.client}`);
      if (config.resume) tlsSession = await import('../dist/agent/tls-session.js');
      return { type: 'ready' };
    case 'connect': {
      const first = agents.length;
      let next = 0;
      let ok = 0;
      await Promise.all(
        Array.from({ length: Math.min(msg.concurrency, msg.agents.length) }, async () => {
          while (next < msg.agents.length) if (await connectAgent(msg.agents[next++])) ok++;
        }),
      );
      const connectMs = agents.slice(first).flatMap((a) => (a.connectMs === undefined ? [] : [a.connectMs]));
      return {
        type: 'connected',
        ok,
        failed: msg.agents.length - ok,
        connectMs,
        errors: Object.fromEntries(errors),
      };
    }
    case 'collect': {
      const out = {
        type: 'collected',
        received,
        ...totals,
        connected: connectedCount(),
        errors: Object.fromEntries(errors),
      };
      received = [];
      return out;
    }
    case 'window-start':
      window = { sent: 0, acked: 0, latencies: [] };
      return { type: 'window-started' };
    case 'window-end': {
      const w = window;
      window = null;
      // Heartbeats sent inside the window get a grace period for their acks.
      const closed = now();
      while (w.acked < w.sent && now() - closed < 5000) await new Promise((r) => setTimeout(r, 20));
      w.final = true;
      return { type: 'window', sent: w.sent, acked: w.acked, latencies: w.latencies };
    }
    case 'mark':
      for (const agent of agents) agent.lost = undefined;
      loopDelay.reset();
      if (msg.profileDir) {
        profiler ??= new Session();
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
      }
      return { type: 'marked' };
    case 'reconnects':
      if (msg.summary) {
        const lost = agents.flatMap((a) => (a.lost ? [a.lost] : []));
        return {
          type: 'reconnects',
          lost: lost.length,
          welcomed: lost.filter((l) => l.welcomeAt !== undefined).length,
          acked: lost.filter((l) => l.ackAt !== undefined).length,
          connected: connectedCount(),
          errors: Object.fromEntries(errors),
          loopP99Ms: loopDelay.percentile(99) / 1e6,
          loopMaxMs: loopDelay.max / 1e6,
        };
      }
      if (msg.profileDir && profiler) {
        const { profile } = await profiler.post('Profiler.stop');
        profiler.disconnect();
        writeFileSync(
          join(msg.profileDir, `agents-${process.pid}-${++profiles}.cpuprofile`),
          JSON.stringify(profile),
        );
      }
      return {
        type: 'reconnects',
        agents: agents.flatMap((a) => (a.lost ? [a.lost] : [])),
        connected: connectedCount(),
      };
    case 'stop':
      for (const agent of agents) close(agent);
      setTimeout(() => process.exit(0), 200).unref();
      return { type: 'stopped' };
    default:
      throw new Error(`unknown message ${msg.type}`);
  }
}

process.on('message', async (msg) => {
  try {
    process.send(await handle(msg));
  } catch (err) {
    process.send({ type: 'error', message: err instanceof Error ? err.stack : String(err) });
  }
});
