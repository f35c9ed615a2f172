// MCP against plain HTTP: calls/s of one read operation, the tunnel's status, as the tool
// `get_tunnel_status` over /mcp with the SDK's own Client, and as GET /api/v1/tunnel/status with
// fetch, on the same running service (embedded database), closed loop with 1 and with CONCURRENCY
// calls in flight. The two take turns in short rounds, so a change in the load of a shared machine
// falls on both alike.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BENCH_ADMIN, MAIN, benchToken, median, spawnUntilReady, table } from './lib.mjs';

const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_MCP_ROUNDS ?? 5);
const WARMUP_SECONDS = 2;
const CONCURRENCY = Number(process.env.BENCH_MCP_CONCURRENCY ?? 10);

/**
 * `workers` loops calling `call` back to back for `seconds`; each call's latency is pushed to
 * `latencies`. Resolves to the seconds it took. A call that fails stops the bench (a rate of
 * failures is no rate of calls).
 */
async function closedLoop(call, workers, seconds, latencies = []) {
  const end = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < end) {
      const started = performance.now();
      await call();
      latencies.push(performance.now() - started);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: workers }, worker));
  return (performance.now() - started) / 1000;
}

/** Both calls warmed up, then ROUNDS turns of each, LOAD_SECONDS in all per call. */
async function compare(calls, workers) {
  for (const call of Object.values(calls)) await closedLoop(call, workers, WARMUP_SECONDS);
  const totals = Object.fromEntries(Object.keys(calls).map((name) => [name, { seconds: 0, latencies: [] }]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, call] of Object.entries(calls)) {
      totals[name].seconds += await closedLoop(call, workers, LOAD_SECONDS / ROUNDS, totals[name].latencies);
    }
  }
  return Object.fromEntries(
    Object.entries(totals).map(([name, { seconds, latencies }]) => [
      name,
      { perSecond: latencies.length / seconds, p50: median(latencies) },
    ]),
  );
}

export async function mcpBench() {
  const dataDir = mkdtempSync(join(tmpdir(), 'so-bench-mcp-'));
  const svc = await spawnUntilReady(
    MAIN,
    {
      DATA_DIR: dataDir,
      BOOTSTRAP_CLIENT_ID: BENCH_ADMIN.id,
      BOOTSTRAP_CLIENT_SECRET: BENCH_ADMIN.secret,
      RATE_LIMIT_REQUESTS: '0',
      TUNNEL_STUN_SERVERS: 'none',
    },
    '/health/ready',
  );
  const client = new Client({ name: 'bench', version: '1.0.0' });
  try {
    const authorization = `Bearer ${await benchToken(svc.url, 'tunnel:read')}`;
    const http = async () => {
      const res = await fetch(`${svc.url}/api/v1/tunnel/status`, { headers: { authorization } });
      const body = await res.json();
      if (res.status !== 200 || typeof body.state !== 'string')
        throw new Error(`HTTP answered ${res.status}`);
    };
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${svc.url}/mcp`), {
        requestInit: { headers: { authorization } },
      }),
    );
    // As a real client does: the listing also makes the client check each result against the
    // tool's output schema.
    await client.listTools();
    const mcp = async () => {
      const result = await client.callTool({ name: 'get_tunnel_status', arguments: {} });
      if (result.isError || typeof result.structuredContent?.state !== 'string')
        throw new Error(`the tool answered ${JSON.stringify(result)}`);
    };

    const rows = [];
    for (const workers of [1, CONCURRENCY]) {
      const { overHttp, overMcp } = await compare({ overHttp: http, overMcp: mcp }, workers);
      const label = workers === 1 ? 'sequential (1 in flight)' : `${workers} in flight`;
      rows.push([
        label,
        overHttp.perSecond.toFixed(0),
        overHttp.p50.toFixed(2),
        overMcp.perSecond.toFixed(0),
        overMcp.p50.toFixed(2),
        `${((overMcp.perSecond / overHttp.perSecond) * 100).toFixed(0)} %`,
      ]);
    }
    return table(
      `Tunnel status: MCP tool call against plain HTTP, closed loop, ${LOAD_SECONDS} s each in ${ROUNDS} turns after a ${WARMUP_SECONDS} s warm-up, embedded database`,
      ['calls', 'HTTP calls/s', 'HTTP p50 ms', 'MCP calls/s', 'MCP p50 ms', 'MCP / HTTP'],
      rows,
    );
  } finally {
    await client.close();
    await svc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
