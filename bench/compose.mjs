// Compose files (docs/compose.md): how long validation of a 40-service Compose file takes (the
// validator as a function, after its schema is compiled, and as POST .../unifier/validate), and
// the time from deploy to every service healthy of a five-service Compose stack with volumes and
// service_healthy conditions on podman, against `docker-compose up -d` (Debian's 1.29) of the same
// file on the same engine in the same run.
//
// Needs `npm run build`, podman's Docker API (scripts/podman-setup.sh, PODMAN_SOCKET) and
// docker-compose. Podman runs health checks from systemd timers, which this machine has not: for
// docker-compose the bench runs `podman healthcheck run` for each container at the file's interval,
// as the timer would. The orchestrator's agent runs its checks itself.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_ADMIN, benchToken, median, spawnUntilReady, table, MAIN } from './lib.mjs';

const run = promisify(execFile);
const env = process.env;
const SOCKET = env.PODMAN_SOCKET ?? '/run/stack-test/podman.sock';
const IMAGE = env.BENCH_COMPOSE_IMAGE ?? 'localhost/stack-test/busybox:1';
const ROUNDS = Number(env.BENCH_COMPOSE_ROUNDS ?? 3);
const VALIDATIONS = Number(env.BENCH_COMPOSE_VALIDATIONS ?? 200);
const API = '/api/v1/orchestrator';
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** 40 services of the shapes real files have: volumes, health checks, conditions, ports, configs. */
export function fortyServices() {
  const services = [];
  for (let i = 0; i < 40; i++) {
    const deps =
      i === 0
        ? ''
        : `\n    depends_on:\n      s${i - 1}: { condition: ${i % 2 ? 'service_healthy' : 'service_started'} }`;
    services.push(`  s${i}:
    image: registry.example.com/team/app-${i}:1.${i}
    command: "serve --port 80${String(i).padStart(2, '0')} --name \${NAME:-s${i}}"
    environment:
      - DATABASE_URL=postgres://app:\${DB_PASSWORD}@db/app
      - LOG_LEVEL=info
      - PASS_THROUGH
    ports: ["${20000 + i}:80"]
    volumes: ["data${i}:/var/lib/app", "/cache"]
    healthcheck:
      test: ["CMD-SHELL", "wget -q -O- http://localhost/health || exit 1"]
      interval: 10s
      retries: 5
    restart: unless-stopped
    labels: { app: s${i} }${deps}
    configs: [{ source: conf, target: /etc/app-${i}.conf }]`);
  }
  return `name: forty
services:
${services.join('\n')}
volumes:
${Array.from({ length: 40 }, (_, i) => `  data${i}:`).join('\n')}
configs:
  conf: { content: "listen 80" }
x-stackkit: cloud-kit
`;
}

/** Five services: a database-like writer with a volume and a check, two that wait for it, a one-shot, a front. */
function fiveServices(port) {
  const sh = (script) => JSON.stringify(['sh', '-c', `trap 'exit 0' TERM; ${script}`]);
  return `services:
  db:
    image: ${IMAGE}
    command: ${sh('mkdir -p /data && echo ok > /data/ready && sleep 1 && touch /tmp/up && httpd -f -p 8080 -h /data & wait')}
    volumes: [db-data:/data]
    healthcheck: { test: ["CMD-SHELL", "test -f /tmp/up"], interval: 1s, retries: 30 }
  cache:
    image: ${IMAGE}
    command: ${sh('touch /tmp/up; sleep 3600 & wait')}
    volumes: [cache-data:/data]
    healthcheck: { test: ["CMD-SHELL", "test -f /tmp/up"], interval: 1s, retries: 30 }
  migrate:
    image: ${IMAGE}
    command: ["sh", "-c", "echo migrated > /data/migrated"]
    volumes: [db-data:/data]
    depends_on: { db: { condition: service_healthy } }
    restart: "no"
  api:
    image: ${IMAGE}
    command: ${sh('touch /tmp/up; sleep 3600 & wait')}
    depends_on:
      db: { condition: service_healthy }
      cache: { condition: service_healthy }
      migrate: { condition: service_completed_successfully }
    healthcheck: { test: ["CMD-SHELL", "test -f /tmp/up"], interval: 1s, retries: 30 }
  web:
    image: ${IMAGE}
    command: ${sh('mkdir -p /www && echo hi > /www/index.html && httpd -f -p 8080 -h /www & wait')}
    ports: ["127.0.0.1:${port}:8080"]
    depends_on: { api: { condition: service_healthy } }
    healthcheck: { test: ["CMD-SHELL", "wget -q -O- http://127.0.0.1:8080/ >/dev/null"], interval: 1s, retries: 30 }
volumes:
  db-data:
  cache-data:
`;
}

async function validationRows() {
  const { validateDefinition } = await import('../dist/server/stacks/definition/validate-definition.js');
  const source = fortyServices();
  const options = { variables: { DB_PASSWORD: 'pw', PASS_THROUGH: 'x' } };
  const compileStart = now();
  const first = validateDefinition(source, undefined, options);
  const compileMs = now() - compileStart;
  if (first.kind !== 'valid')
    throw new Error(`the 40-service file is not valid: ${JSON.stringify(first).slice(0, 500)}`);
  const times = [];
  for (let i = 0; i < VALIDATIONS; i++) {
    const t0 = now();
    validateDefinition(source, undefined, options);
    times.push(now() - t0);
  }
  times.sort((a, b) => a - b);
  const p95 = times[Math.floor(times.length * 0.95)];

  // Over HTTP: the service on the embedded database.
  const service = await spawnUntilReady(
    MAIN,
    {
      DATA_DIR: mkdtempSync(join(tmpdir(), 'bench-compose-')),
      BOOTSTRAP_CLIENT_ID: BENCH_ADMIN.id,
      BOOTSTRAP_CLIENT_SECRET: BENCH_ADMIN.secret,
      AGENT_PORT: '0',
    },
    '/health/ready',
  );
  const httpTimes = [];
  try {
    const token = await benchToken(service.url);
    const body = JSON.stringify({ definition: source, variables: options.variables });
    for (let i = 0; i < 60; i++) {
      const t0 = now();
      const res = await fetch(`${service.url}${API}/unifier/validate`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body,
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`validate answered ${res.status}`);
      if (i >= 10) httpTimes.push(now() - t0);
    }
  } finally {
    await service.stop();
  }
  return [
    ['validateDefinition, first call (schema compiled)', compileMs.toFixed(1)],
    [`validateDefinition, median of ${VALIDATIONS}`, median(times).toFixed(2)],
    [`validateDefinition, p95 of ${VALIDATIONS}`, p95.toFixed(2)],
    ['POST unifier/validate (JSON body), median of 50', median(httpTimes).toFixed(2)],
  ];
}

async function podman(args) {
  return (await run('podman', args, { maxBuffer: 16 * 2 ** 20 })).stdout;
}

/** docker-compose up -d, with podman's health checks run by hand at 1 s, until every check passes. */
async function composeUp(file, project) {
  const t0 = now();
  const composeEnv = { ...process.env, DOCKER_HOST: `unix://${SOCKET}` };
  const up = spawn('docker-compose', ['-p', project, '-f', file, 'up', '-d'], {
    env: composeEnv,
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => up.once('exit', resolve));
  let upDone = false;
  void exited.then(() => (upDone = true));
  const checked = new Set(['db', 'cache', 'api', 'web']);
  for (;;) {
    const names = (
      await podman([
        'ps',
        '-a',
        '--filter',
        `label=com.docker.compose.project=${project}`,
        '--format',
        '{{.Names}}',
      ])
    )
      .split('\n')
      .filter(Boolean);
    let healthy = 0;
    await Promise.all(
      names.map(async (name) => {
        const service = [...checked].find((s) => name.includes(`_${s}_`));
        if (!service) return;
        try {
          await podman(['healthcheck', 'run', name]);
          healthy++;
        } catch {
          // not yet, or not running yet
        }
      }),
    );
    if (upDone && healthy === checked.size) break;
    if (now() - t0 > 180_000) throw new Error('docker-compose: not healthy within 180 s');
    await sleep(1000);
  }
  const code = await exited;
  if (code !== 0) throw new Error(`docker-compose up exited ${code}`);
  return now() - t0;
}

async function composeDown(file, project) {
  await run('docker-compose', ['-p', project, '-f', file, 'down', '-v', '-t', '1'], {
    env: { ...process.env, DOCKER_HOST: `unix://${SOCKET}` },
  }).catch(() => undefined);
}

async function orchestratorUp(service, token, workerReady, source, round) {
  const auth = { Authorization: `Bearer ${token}` };
  const created = await fetch(`${service.url}${API}/stacks?name=bench-five-${round}`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/yaml' },
    body: source,
  });
  const stack = await created.json();
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(stack)}`);
  await workerReady;
  const t0 = now();
  const deploy = await fetch(`${service.url}${API}/stacks/${stack.id}/deploy`, {
    method: 'POST',
    headers: auth,
  });
  const job = await deploy.json();
  for (;;) {
    const [jobRes, healthRes] = await Promise.all([
      fetch(`${service.url}${API}/jobs/${job.id}`, { headers: auth }),
      fetch(`${service.url}${API}/stacks/${stack.id}/health`, { headers: auth }),
    ]);
    const j = await jobRes.json();
    const h = await healthRes.json();
    if (j.status === 'failed') throw new Error(`deploy failed: ${j.error} ${JSON.stringify(j.results)}`);
    const checked = (h.services ?? []).filter((s) => s.name !== 'migrate');
    if (j.status === 'succeeded' && checked.length === 4 && checked.every((s) => s.status === 'healthy'))
      break;
    if (now() - t0 > 180_000) throw new Error('orchestrator: not healthy within 180 s');
    await sleep(50);
  }
  const ms = now() - t0;
  const destroy = await fetch(`${service.url}${API}/stacks/${stack.id}?volumes=delete`, {
    method: 'DELETE',
    headers: auth,
  });
  const destroyJob = await destroy.json();
  for (let i = 0; i < 600; i++) {
    const j = await (await fetch(`${service.url}${API}/jobs/${destroyJob.id}`, { headers: auth })).json();
    if (j.status === 'succeeded' || j.status === 'failed') break;
    await sleep(100);
  }
  return ms;
}

async function deployRows() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-compose-up-'));
  const service = await spawnUntilReady(
    MAIN,
    {
      DATA_DIR: join(dir, 'service'),
      BOOTSTRAP_CLIENT_ID: BENCH_ADMIN.id,
      BOOTSTRAP_CLIENT_SECRET: BENCH_ADMIN.secret,
      AGENT_PORT: '0',
      PUBLIC_URL: 'http://127.0.0.1',
      HEARTBEAT_INTERVAL: '1s',
    },
    '/health/ready',
  );
  let agent;
  const ours = [];
  const theirs = [];
  try {
    const token = await benchToken(service.url);
    const auth = { Authorization: `Bearer ${token}` };
    service.url = service.url.replace('localhost', '127.0.0.1');
    const joinToken = await (
      await fetch(`${service.url}${API}/join-tokens`, {
        method: 'POST',
        headers: { ...auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ pre_approved: true }),
      })
    ).json();
    agent = spawn(
      process.execPath,
      [
        new URL('../dist/agent/main.js', import.meta.url).pathname,
        '--server',
        service.url,
        '--data-dir',
        join(dir, 'agent'),
        '--name',
        'bench-compose',
        '--driver',
        'docker',
        '--docker-socket',
        SOCKET,
        '--docker-ulimits',
        'nofile=1024:1024,nproc=1024:1024',
      ],
      {
        env: { PATH: process.env.PATH, STACK_AGENT_TOKEN: joinToken.token, LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      },
    );
    const workerReady = (async () => {
      for (let i = 0; i < 600; i++) {
        const list = await (await fetch(`${service.url}${API}/workers`, { headers: auth })).json();
        if ((list.workers ?? []).some((w) => w.connected && w.driver === 'docker')) return;
        await sleep(100);
      }
      throw new Error('the agent did not connect');
    })();
    for (let round = 0; round < ROUNDS; round++) {
      // Each its own port: the two stacks run side by side until the round ends.
      const source = fiveServices(21000 + round);
      const file = join(dir, `compose-${round}.yaml`);
      writeFileSync(file, fiveServices(21100 + round));
      // Alternated, so neither always runs on a warmer engine.
      if (round % 2 === 0) {
        ours.push(await orchestratorUp(service, token, workerReady, source, round));
        theirs.push(await composeUp(file, `benchfive${round}`));
      } else {
        theirs.push(await composeUp(file, `benchfive${round}`));
        ours.push(await orchestratorUp(service, token, workerReady, source, round));
      }
      await composeDown(file, `benchfive${round}`);
    }
  } finally {
    agent?.kill('SIGTERM');
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const ratio = median(ours) / median(theirs);
  return [
    [
      'orchestrator: deploy to every check healthy',
      median(ours).toFixed(0),
      ours.map((v) => v.toFixed(0)).join(', '),
    ],
    [
      'docker-compose 1.29 up -d to every check healthy',
      median(theirs).toFixed(0),
      theirs.map((v) => v.toFixed(0)).join(', '),
    ],
    ['ratio (aim: at most 1.5)', ratio.toFixed(2), ''],
  ];
}

export async function composeBench() {
  const parts = [
    table(
      'Compose: validation of a 40-service file (aim: under 50 ms)',
      ['what', 'ms'],
      await validationRows(),
    ),
  ];
  if (env.BENCH_COMPOSE_DEPLOY !== '0') {
    parts.push(
      table(
        `Compose: five services with volumes and service_healthy conditions on podman, ${ROUNDS} rounds alternated`,
        ['what', 'median ms', 'rounds ms'],
        await deployRows(),
      ),
    );
  }
  return parts.join('\n');
}
