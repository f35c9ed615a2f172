// Load process for bench/agents.mjs (forked with node:child_process): simulated agents, each a real
// grpc-js client with its own certificate and its own TLS connection, holding the Connect stream,
// heartbeating at the interval the service's `welcome` sets with a random initial phase, and timing
// every heartbeat until its `heartbeat_ack`. Driven over IPC:
//   {type:'init', endpoint, caPem}                      -> {type:'ready'}
//   {type:'connect', agents:[{id,keyPem,certPem}], concurrency}
//   {type:'burst', bytes}: every connected agent uploads one heartbeat that large (burst-done)
//                                                       -> {type:'connected', ok, failed, ...}
//   {type:'window-start'} / {type:'window-end', graceMs} -> {type:'window', latencies, sent, ...}
//   {type:'stop'}                                       -> {type:'stopped'}, then exit
import * as grpc from '@grpc/grpc-js';
import { hostname } from 'node:os';
import { monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { loadAgentProto } from '../dist/contracts/agent-protocol/index.js';

const CONNECT_TIMEOUT_MS = 30_000;
const proto = loadAgentProto();
const HOST = hostname();

let endpoint = '';
let caPem = Buffer.alloc(0);
/** Every agent this process started: {id, client, stream, connected, seq, pending, timers}. */
const agents = [];
/** Counters since the process started; windows take differences. */
const totals = { disconnects: 0, streamErrors: 0, lateAcks: 0, unknownAcks: 0 };
const errorSamples = new Map();
/** The open measurement window, or null: heartbeats sent while it is open are measured. */
let window = null;
const LOOP_RESOLUTION_MS = 5;
const loopDelay = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
loopDelay.enable();

/** Garbage collection pauses of this process during the open window. */
new PerformanceObserver((list) => {
  if (!window) return;
  for (const e of list.getEntries()) {
    window.gcMs += e.duration;
    if (e.duration > 20)
      window.stalls.push([Math.round(performance.timeOrigin + e.startTime), e.duration, 'gc']);
    window.gcMaxMs = Math.max(window.gcMaxMs, e.duration);
  }
}).observe({ entryTypes: ['gc'] });

/** Event-loop stalls of this process over 50 ms during the open window, with their time. */
let lastTick = performance.now();
setInterval(() => {
  const now = performance.now();
  if (window && now - lastTick > 50)
    window.stalls.push([Math.round(performance.timeOrigin + lastTick), now - lastTick]);
  lastTick = now;
}, 5);

/** Acks slower than this are kept with their send time, for lining up with the service's stalls. */
const SLOW_MS = 10;

function noteError(what) {
  errorSamples.set(what, (errorSamples.get(what) ?? 0) + 1);
}

/**
 * One heartbeat; with `detailBytes`, its first check carries that much detail: an upload as large
 * as a scrape or a burst of service output, for the memory it leaves behind (agent-memory.mjs).
 */
function heartbeat(agent, detailBytes = 0) {
  if (!agent.connected) return;
  const sequence = ++agent.seq;
  const entry = { t: performance.now(), window, burst: detailBytes > 0 };
  agent.pending.set(sequence, entry);
  if (window) {
    window.sent++;
    // Sends per 10 ms, to show the schedule stays spread (the mean is rate / 100).
    const bucket = Math.floor(entry.t / 10);
    window.buckets.set(bucket, (window.buckets.get(bucket) ?? 0) + 1);
  }
  agent.stream.write({
    heartbeat: {
      sequence,
      metrics: {
        cpu_percent: 5 + Math.random() * 30,
        memory_percent: 30 + Math.random() * 20,
        disk_percent: 40 + Math.random() * 5,
        containers_running: 0,
      },
      checks: [
        { name: 'data_dir_writable', ok: true, critical: false, detail: 'x'.repeat(detailBytes) },
        { name: 'driver', ok: true, critical: true, detail: '' },
      ],
    },
  });
}

function onAck(agent, sequence) {
  const entry = agent.pending.get(sequence);
  if (!entry) {
    totals.unknownAcks++;
    return;
  }
  agent.pending.delete(sequence);
  if (entry.burst) burstAcked();
  const w = entry.window;
  if (!w) return;
  if (w.closedAt !== undefined && w.final) {
    totals.lateAcks++;
    return;
  }
  const latency = performance.now() - entry.t;
  w.latencies.push(latency);
  w.acked++;
  if (latency > SLOW_MS && w.slow.length < 20_000)
    w.slow.push([Math.round(performance.timeOrigin + entry.t), latency]);
}

/** Opens one agent's stream; resolves true at `welcome`, false on error or timeout. */
function connectAgent(spec) {
  return new Promise((resolve) => {
    const started = performance.now();
    const credentials = grpc.credentials.createSsl(
      caPem,
      Buffer.from(spec.keyPem),
      Buffer.from(spec.certPem),
    );
    // Its own subchannel pool: one TLS connection per agent, as with real agents on separate hosts.
    const client = new proto.AgentGateway(endpoint, credentials, {
      'grpc.use_local_subchannel_pool': 1,
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
    });
    const stream = client.Connect();
    const agent = {
      id: spec.id,
      client,
      stream,
      connected: false,
      seq: 0,
      pending: new Map(),
      next: 0,
      timer: undefined,
      connectMs: 0,
    };
    agents.push(agent);
    let settled = false;
    const settle = (ok) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(ok);
    };
    const timer = setTimeout(() => {
      noteError('connect timeout');
      close(agent);
      settle(false);
    }, CONNECT_TIMEOUT_MS);
    stream.on('data', (message) => {
      if (message.heartbeat_ack) onAck(agent, message.heartbeat_ack.sequence);
      else if (message.welcome) {
        agent.connected = true;
        agent.connectMs = performance.now() - started;
        const every = Math.max(100, message.welcome.heartbeat_interval_ms);
        // A random phase over the interval, so the fleet's heartbeats are spread evenly; then a
        // fixed schedule (phase + k × interval). Not setInterval: it re-arms from the event loop's
        // time of the tick the callback ran in, so every agent whose beat was due in one tick gets
        // the same next time, for good. In one process holding thousands of agents the beats then
        // coalesce into ever larger bursts, which agents on separate hosts never do.
        agent.next = performance.now() + Math.random() * every;
        const beat = () => {
          heartbeat(agent);
          const now = performance.now();
          do agent.next += every;
          while (agent.next <= now);
          agent.timer = setTimeout(beat, Math.max(1, Math.round(agent.next - now)));
        };
        agent.timer = setTimeout(beat, Math.max(1, Math.round(agent.next - performance.now())));
        settle(true);
      } else if (message.disconnect) noteError(`disconnect: ${message.disconnect.reason}`);
    });
    const lost = (why) => {
      if (agent.closing) return;
      if (agent.connected) totals.disconnects++;
      agent.connected = false;
      noteError(why);
      clearTimeout(agent.timer);
      settle(false);
    };
    stream.on('error', (err) => {
      totals.streamErrors++;
      lost(`stream error ${err.code}: ${err.details}`);
    });
    stream.on('end', () => lost('stream ended by the service'));
    stream.write({
      hello: { worker_id: spec.id, version: 'bench', hostname: HOST, driver: 'process', probe_address: '' },
    });
  });
}

function close(agent) {
  agent.closing = true;
  agent.connected = false;
  clearTimeout(agent.timer);
  try {
    agent.stream.cancel();
  } catch {
    // already closed
  }
  agent.client.close();
}

async function connectAll(specs, concurrency) {
  const started = performance.now();
  const first = agents.length;
  let next = 0;
  let ok = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, specs.length) }, async () => {
      while (next < specs.length) {
        const spec = specs[next++];
        if (await connectAgent(spec)) ok++;
        else failed++;
      }
    }),
  );
  const connectMs = agents
    .slice(first)
    .filter((a) => a.connected)
    .map((a) => a.connectMs);
  return { ok, failed, elapsedMs: performance.now() - started, connectMs };
}

const connectedCount = () => agents.reduce((n, a) => n + (a.connected ? 1 : 0), 0);

async function endWindow(graceMs) {
  const w = window;
  window = null;
  if (!w)
    return {
      latencies: [],
      slow: [],
      stalls: [],
      buckets: new Map(),
      sent: 0,
      acked: 0,
      gcMs: 0,
      gcMaxMs: 0,
    };
  w.closedAt = performance.now();
  // Heartbeats sent inside the window get `graceMs` for their acks; later ones count as lost.
  while (w.acked < w.sent && performance.now() - w.closedAt < graceMs) {
    await new Promise((r) => setTimeout(r, 20));
  }
  w.final = true;
  return w;
}

function snapshotErrors() {
  const out = Object.fromEntries(errorSamples);
  errorSamples.clear();
  return out;
}

let burstAcked = () => {};

/** Every connected agent uploads `bytes` once; resolves with how many were acknowledged. */
async function burst(bytes, timeoutMs = 120_000) {
  const uploading = agents.filter((a) => a.connected);
  let acked = 0;
  const done = new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    burstAcked = () => {
      if (++acked === uploading.length) {
        clearTimeout(timer);
        resolve();
      }
    };
  });
  for (const agent of uploading) heartbeat(agent, bytes);
  await done;
  burstAcked = () => {};
  return {
    sent: uploading.length,
    acked,
    connected: connectedCount(),
    disconnects: totals.disconnects,
    errors: snapshotErrors(),
  };
}

process.on('message', async (msg) => {
  try {
    switch (msg.type) {
      case 'init':
        endpoint = msg.endpoint;
        caPem = Buffer.from(msg.caPem);
        process.send({ type: 'ready' });
        break;
      case 'burst':
        process.send({ type: 'burst-done', ...(await burst(msg.bytes)) });
        break;
      case 'connect': {
        const before = { ...totals };
        const result = await connectAll(msg.agents, msg.concurrency);
        process.send({
          type: 'connected',
          ...result,
          connected: connectedCount(),
          disconnects: totals.disconnects - before.disconnects,
          errors: snapshotErrors(),
        });
        break;
      }
      case 'window-start':
        loopDelay.reset();
        window = {
          latencies: [],
          sent: 0,
          acked: 0,
          gcMs: 0,
          gcMaxMs: 0,
          slow: [],
          buckets: new Map(),
          stalls: [],
          before: { ...totals },
          connectedAtStart: connectedCount(),
        };
        process.send({ type: 'window-started' });
        break;
      case 'window-end': {
        const w = await endWindow(msg.graceMs);
        process.send({
          type: 'window',
          latencies: w.latencies,
          slow: w.slow,
          stalls: w.stalls,
          maxSendsPer10ms: Math.max(0, ...w.buckets.values()),
          gcMs: w.gcMs,
          gcMaxMs: w.gcMaxMs,
          sent: w.sent,
          acked: w.acked,
          connectedAtStart: w.connectedAtStart,
          connected: connectedCount(),
          disconnects: totals.disconnects - w.before.disconnects,
          streamErrors: totals.streamErrors - w.before.streamErrors,
          unknownAcks: totals.unknownAcks - w.before.unknownAcks,
          // The histogram holds whole timer periods: the delay is what exceeds the resolution.
          loopDelayP99Ms: Math.max(0, loopDelay.percentile(99) / 1e6 - LOOP_RESOLUTION_MS),
          loopDelayMaxMs: Math.max(0, loopDelay.max / 1e6 - LOOP_RESOLUTION_MS),
          heapMiB: process.memoryUsage().heapUsed / 2 ** 20,
          errors: snapshotErrors(),
        });
        break;
      }
      case 'stop':
        for (const agent of agents) close(agent);
        process.send({ type: 'stopped' });
        setTimeout(() => process.exit(0), 200).unref();
        break;
      default:
        throw new Error(`unknown message ${msg.type}`);
    }
  } catch (err) {
    process.send({ type: 'error', message: err instanceof Error ? err.stack : String(err) });
  }
});
