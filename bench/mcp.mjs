// MCP against plain HTTP: calls/s of one read operation, the tunnel's status, as the tool
// `get_tunnel_status` over /mcp with the SDK's own Client, and as GET /api/v1/tunnel/status with
// fetch, on the same running service (embedded database), one after the other, closed loop with
// 1 and with CONCURRENCY calls in flight.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BENCH_ADMIN, MAIN, benchToken, median, spawnUntilReady, table } from './lib.mjs';

const LOAD_SECONDS = Number(process.env.BENCH_LOAD_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const CONCURRENCY = Number(process.env.BENCH_MCP_CONCURRENCY ?? 10);
/**
 * `workers` loops calling `call` back to back for `seconds`: calls/s and the median latency. A call
 * that fails stops the bench (a rate of failures is no rate of calls).
 */
async function closedLoop(call, workers, seconds) {
  const latencies = [];
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
  const elapsed = (performance.now() - started) / 1000;
  return { perSecond: latencies.length / elapsed, p50: median(latencies) };
}

async function measure(call, workers) {
  await closedLoop(call, workers, WARMUP_SECONDS);
  return closedLoop(call, workers, LOAD_SECONDS);
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
      const overHttp = await measure(http, workers);
      const overMcp = await measure(mcp, workers);
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
      `Tunnel status: MCP tool call against plain HTTP, closed loop, ${LOAD_SECONDS} s after a ${WARMUP_SECONDS} s warm-up, embedded database`,
      ['calls', 'HTTP calls/s', 'HTTP p50 ms', 'MCP calls/s', 'MCP p50 ms', 'MCP / HTTP'],
      rows,
    );
  } finally {
    await client.close();
    await svc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
