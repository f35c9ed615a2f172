// `npm run bench`: every benchmark, each printing a markdown table. Record results in docs/benchmarks.md.
import { cpus, totalmem } from 'node:os';
import { agentsBench } from './agents.mjs';
import { composeBench } from './compose.mjs';
import { dispatchBench } from './dispatch.mjs';
import { enrollBench } from './enroll.mjs';
import { idleMemoryBench } from './idle-memory.mjs';
import { agentMemoryBench } from './agent-memory.mjs';
import { metricChunksBench } from './metric-chunks.mjs';
import { promqlBench } from './promql.mjs';
import { mcpBench } from './mcp.mjs';
import { metricRemoteWriteBench } from './metric-remote-write.mjs';
import { metricStoreBench } from './metric-store.mjs';
import { replicasBench } from './replicas.mjs';
import { liveThroughputBench, startupBench } from './startup-and-http.mjs';
import { stormBench } from './storm.mjs';
import { tokensBench } from './tokens.mjs';
import { tunnelBench } from './tunnel.mjs';

const only = process.argv[2];
const benches = {
  startup: startupBench,
  live: liveThroughputBench,
  idle: idleMemoryBench,
  tokens: tokensBench,
  agents: agentsBench,
  enroll: enrollBench,
  'agent-memory': agentMemoryBench,
  dispatch: dispatchBench,
  replicas: replicasBench,
  storm: stormBench,
  tunnel: tunnelBench,
  'metric-chunks': metricChunksBench,
  promql: promqlBench,
  mcp: mcpBench,
  'metric-remote-write': metricRemoteWriteBench,
  'metric-store': metricStoreBench,
  compose: composeBench,
};

console.log(`# stack-orchestrator benchmarks, ${new Date().toISOString()}`);
console.log(
  `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB\n`,
);
for (const [name, bench] of Object.entries(benches)) {
  if (only && only !== name) continue;
  console.log(await bench());
}
