import * as grpc from '@grpc/grpc-js';
import { connect as tcpConnect, type Socket } from 'node:net';
import { newKeyAndCsr } from '../../src/agent/identity.js';
import type { TestApp } from './app.js';
import { loadAgentProto, type ServerMessage } from '../../src/contracts/agent-protocol/index.js';
import {
  AGENT_MAX_BACKOFF_MS,
  AGENT_WELCOME_TIMEOUT_MS,
} from '../../src/contracts/agent-protocol/reconnect.js';

const proto = loadAgentProto();

/** What a pre-approved enrollment gives an agent: its worker id, key, certificate and the CA. */
export interface AgentIdentity {
  id: string;
  keyPem: string;
  certPem: string;
  caPem: string;
}

/** A join token whose nodes are approved at enrollment, made by the app's admin. */
export async function preApprovedToken(app: Pick<TestApp, 'http' | 'adminAuth'>): Promise<string> {
  const res = await app.http
    .post('/api/v1/orchestrator/join-tokens')
    .set('Authorization', await app.adminAuth())
    .send({ pre_approved: true })
    .expect(201);
  return res.body.token as string;
}

/** A test agent's hello message for worker `workerId`, with `fields` added or replaced. */
export function helloMessage(workerId: string, fields: Record<string, unknown> = {}): { hello: object } {
  return {
    hello: {
      worker_id: workerId,
      version: 'test',
      hostname: 'hand-rolled',
      driver: 'process',
      probe_address: '',
      ...fields,
    },
  };
}

/** Where the app's agents connect (`agent_endpoint` of /info), asked as its admin. */
export async function agentEndpoint(app: Pick<TestApp, 'http' | 'adminAuth'>): Promise<string> {
  const res = await app.http
    .get('/api/v1/orchestrator/info')
    .set('Authorization', await app.adminAuth())
    .expect(200);
  return res.body.agent_endpoint as string;
}

/** Enrolls a node through `baseUrl` (any replica) with a pre-approved join token. */
export async function enrollAgent(baseUrl: string, token: string, name: string): Promise<AgentIdentity> {
  const { keyPem, csrPem } = await newKeyAndCsr(name);
  const res = await fetch(`${baseUrl}/api/v1/orchestrator/workers/enroll`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      token,
      csr: csrPem,
      hostname: `${name}.test`,
      address: '127.0.0.1',
      os: 'linux',
      arch: 'x64',
      version: 'test',
      driver: 'process',
      name,
    }),
  });
  const body = (await res.json()) as Record<string, string>;
  if (res.status !== 201) throw new Error(`enrollment failed: ${res.status} ${JSON.stringify(body)}`);
  return { id: body.worker_id, keyPem, certPem: body.certificate, caPem: body.ca_certificate };
}

/** A grpc-js client of the agent port with `identity`'s certificate (real mutual TLS). */
export function agentClient(
  endpoint: string,
  identity: AgentIdentity,
): grpc.Client & { Connect(): grpc.ClientDuplexStream<object, ServerMessage> } {
  return new proto.AgentGateway(
    endpoint,
    grpc.credentials.createSsl(
      Buffer.from(identity.caPem),
      Buffer.from(identity.keyPem),
      Buffer.from(identity.certPem),
    ),
  ) as unknown as grpc.Client & { Connect(): grpc.ClientDuplexStream<object, ServerMessage> };
}

/**
 * A hand-rolled agent over real mutual TLS: hello (with `hello`'s fields added, such as the node's
 * `cpu_cores` and `memory_bytes`), then a heartbeat at once and every `intervalMs`, until `close`.
 * Resolves once welcomed. It never answers a job.
 */
export function connectAgent(
  endpoint: string,
  identity: AgentIdentity,
  intervalMs: number,
  hello: Record<string, unknown> = {},
): Promise<{ close(): void }> {
  const client = agentClient(endpoint, identity);
  const stream = client.Connect();
  let timer: NodeJS.Timeout | undefined;
  let sequence = 0;
  const close = () => {
    clearInterval(timer);
    stream.cancel();
    client.close();
  };
  const heartbeat = () =>
    stream.write({
      heartbeat: {
        sequence: ++sequence,
        metrics: { cpu_percent: 1, memory_percent: 1, disk_percent: 1, containers_running: 0 },
        checks: [],
      },
    });
  stream.on('end', () => clearInterval(timer));
  return new Promise((resolve, reject) => {
    stream.on('data', (m: ServerMessage) => {
      if (!m.welcome) return;
      heartbeat();
      timer = setInterval(heartbeat, intervalMs);
      resolve({ close });
    });
    stream.on('error', (err: grpc.ServiceError) => {
      clearInterval(timer);
      if (err.code !== grpc.status.CANCELLED) reject(err);
    });
    stream.write(helloMessage(identity.id, hello));
  });
}

/**
 * Agents waiting for admission at an agent port whose gate admits one connection at a time
 * (AGENT_CONNECT_CONCURRENCY=1): a raw TCP connection, which never starts TLS, every 250 ms. Each
 * admitted one holds the turn until the gate's hold runs out, so more arrive than are admitted and
 * the queue stays non-empty until `stop` closes them all.
 */
export function admissionBacklog(port: number): { stop(): void } {
  const sockets: Socket[] = [];
  const open = () => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    sockets.push(socket);
  };
  open();
  const timer = setInterval(open, 250);
  return {
    stop() {
      clearInterval(timer);
      for (const socket of sockets.splice(0)) socket.destroy();
    },
  };
}

/**
 * The storm tests' settings (docs/workers.md, "Storm grace"): heartbeats every second (silence
 * judged after 3), one agent connection admitted at a time (so `admissionBacklog` queues agents),
 * no worker degraded by this machine's own load. `marginMs`: how long after the last admission
 * backlog the sweep still judges nobody (3 intervals, and at least an agent's welcome timeout plus
 * its largest reconnect delay). `samplingMs`: a replica sees its backlog at its tick and renews the
 * marker at most once a second.
 */
export const STORM = {
  intervalMs: 1000,
  timeoutMs: 3000,
  marginMs: Math.max(3000, AGENT_WELCOME_TIMEOUT_MS + AGENT_MAX_BACKOFF_MS),
  samplingMs: 2000,
  env: {
    HEARTBEAT_INTERVAL: '1000ms',
    AGENT_CONNECT_CONCURRENCY: '1',
    WORKER_DEGRADED_PERCENT: '100',
    WORKER_UNHEALTHY_PERCENT: '100',
  } as Record<string, string>,
};

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
