// Shared by the benchmarks that deploy stacks to simulated agents (bench/dispatch.mjs,
// bench/replicas.mjs): the messages a simulated agent sends, keep-alive HTTP calls, stack creation,
// and reading workers and finished jobs back through the API.
import { Agent as HttpAgent, request } from 'node:http';
import { json, sleep } from './lib-agents.mjs';

export const API = '/api/v1/orchestrator';

/** Milliseconds on CLOCK_MONOTONIC: comparable between processes on this machine. */
export const now = () => Number(process.hrtime.bigint()) / 1e6;

/** Agent capacity in hello: thousands of stacks of 0.01 CPU and 16 MiB fit many times over. */
export const AGENT_CAPACITY = { cpuCores: 64, memoryBytes: 256 * 2 ** 30 };

// ---- a simulated agent's messages ----

export function helloMessage(workerId, hostname, capacity = AGENT_CAPACITY) {
  return {
    hello: {
      worker_id: workerId,
      version: 'bench',
      hostname,
      driver: 'process',
      probe_address: '',
      cpu_cores: capacity.cpuCores,
      memory_bytes: capacity.memoryBytes,
      active_job_ids: [],
    },
  };
}

export function heartbeatMessage(sequence) {
  return {
    heartbeat: {
      sequence,
      metrics: { cpu_percent: 5, memory_percent: 30, disk_percent: 40, containers_running: 0 },
      checks: [
        { name: 'data_dir_writable', ok: true, critical: false, detail: '' },
        { name: 'driver', ok: true, critical: true, detail: '' },
      ],
    },
  };
}

/** What an agent that runs a job at once sends for it: `accepted`, then `succeeded`. */
export function jobAnswers(job) {
  return [
    { job_event: { job_id: job.job_id, phase: 'accepted' } },
    {
      job_event: {
        job_id: job.job_id,
        phase: 'succeeded',
        progress: 100,
        results: job.services.map((s) => ({ name: s.name, action: 'unchanged', ok: true, error: '' })),
      },
    },
  ];
}

// ---- HTTP ----

/** One request on a keep-alive agent; the status and the parsed JSON body (undefined if none). */
export function call(agent, url, { method = 'GET', token, body, type } = {}) {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${token}` };
    if (body !== undefined) {
      headers['content-type'] = type ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    } else if (method !== 'GET') headers['content-length'] = 0;
    const req = request(url, { method, agent, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        let parsed;
        try {
          parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export const stackYaml = (name) => `name: ${name}
stackkit: cloud-kit
services:
  web:
    command: ["/bin/true"]
    resources: { cpu: 0.01, memory: 16Mi }
`;

/** Creates `count` stacks (`bench-00000`, ...), stack i through `urls[i % urls.length]`. */
export async function createStacks(urls, token, count, concurrency = 16) {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: concurrency });
  const ids = new Array(count);
  let next = 0;
  const started = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const res = await call(agent, `${urls[i % urls.length]}${API}/stacks`, {
          method: 'POST',
          token,
          body: stackYaml(`bench-${String(i).padStart(5, '0')}`),
          type: 'application/yaml',
        });
        if (res.status !== 201)
          throw new Error(`create stack ${i}: ${res.status} ${JSON.stringify(res.body)}`);
        ids[i] = res.body.id;
      }
    }),
  );
  agent.destroy();
  return { ids, seconds: (now() - started) / 1000 };
}

/**
 * Deploys every stack once (`POST /stacks/{id}/deploy`) from `concurrency` closed-loop clients on
 * `http`, stack i through `urls[i % urls.length]`: per request the stack, `via` (the URL's index),
 * t0 just before it is written, tResp, the status, the job id and (not 202) the error.
 */
export async function deployAll(http, urls, token, stacks, concurrency) {
  const records = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < stacks.length) {
        const i = next++;
        const rec = { stack: stacks[i], via: i % urls.length, t0: now() };
        const res = await call(http, `${urls[rec.via]}${API}/stacks/${rec.stack}/deploy`, {
          method: 'POST',
          token,
        }).catch((err) => ({ status: 0, body: String(err) }));
        rec.tResp = now();
        rec.status = res.status;
        rec.id = res.body?.id;
        if (res.status !== 202) rec.error = JSON.stringify(res.body).slice(0, 200);
        records.push(rec);
      }
    }),
  );
  return records;
}

/**
 * Collects from the simulated agents (bench/sim-agents.mjs) until every job of `ids` has reached one
 * or `timeoutMs` passed: job id → t1, and the agents' last totals.
 */
export async function jobsAtAgents(agents, ids, timeoutMs = 30_000) {
  const t1 = new Map();
  let totals;
  for (const deadline = now() + timeoutMs; ; await sleep(50)) {
    totals = await agents.request({ type: 'collect' }, 'collected');
    for (const [id, t] of totals.received) if (!t1.has(id)) t1.set(id, t);
    if (ids.every((id) => t1.has(id)) || now() > deadline) return { t1, totals };
  }
}

/** Every worker the API lists (paged, 200 at a time), optionally of one status. */
export async function listWorkers(url, token, status) {
  const out = [];
  let cursor = null;
  do {
    const q = `limit=200${status ? `&status=${status}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await json(`${url}${API}/workers?${q}`, { token });
    if (res.status !== 200) throw new Error(`list workers: ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...res.body.workers);
    cursor = res.body.next_cursor;
  } while (cursor);
  return out;
}

/** Waits until `count` workers are healthy (placeable): each has sent its first heartbeat. */
export async function waitForHealthy(url, token, count, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = (await listWorkers(url, token, 'healthy')).length;
    if (n >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${n} of ${count} workers healthy`);
    await sleep(200);
  }
}

/**
 * The jobs of `ids` as the API lists them with status=succeeded (newest first, 200 a page), once all
 * are there or after `timeoutMs`; pages stop at jobs created before `since` (epoch ms).
 */
export async function succeededJobs(url, token, ids, since, timeoutMs = 60_000) {
  const wanted = new Set(ids);
  const found = new Map();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let cursor = null;
    do {
      const q = `status=succeeded&limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const res = await json(`${url}${API}/jobs?${q}`, { token });
      if (res.status !== 200) throw new Error(`list jobs: ${res.status} ${JSON.stringify(res.body)}`);
      for (const job of res.body.jobs) if (wanted.has(job.id)) found.set(job.id, job);
      const last = res.body.jobs.at(-1);
      cursor = last && Date.parse(last.created_at) >= since ? res.body.next_cursor : null;
    } while (cursor);
    if (found.size === wanted.size || Date.now() > deadline) return found;
    await sleep(250);
  }
}
