import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { register } from 'prom-client';
import { SESSION_TTL_MS } from '../agent-gateway/session-directory.js';
import { AuditService } from '../audit/audit.service.js';
import type { Caller } from '../auth/auth.decorators.js';
import { assertOperator } from '../auth/operator.js';
import { OPERATOR_OWNER } from '../auth/scopes.js';
import { Leases } from '../common/leases.js';
import type { Cursor } from '../common/pagination.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../common/version.js';
import { AppConfig } from '../config/config.js';
import type { DebugBundleCut, DebugBundleManifest, DebugBundleReplica } from '../../contracts/api/debug.js';
import { makePrivateDir } from '../../contracts/private-files.js';
import { OrchestratorHealthService } from '../health/orchestrator-health.service.js';
import { JobsService } from '../jobs/jobs.service.js';
import { LOG_FILE_BASENAME, logDirectory } from '../logging/logging.js';
import { SELF_JOB } from '../metric-store/self-scrape.js';
import { MetricStoreService } from '../metric-store/store/metric-store.service.js';
import { SettingsService } from '../settings/settings.service.js';
import { ConnectivityService } from '../workers/connectivity.service.js';
import { WorkersService } from '../workers/workers.service.js';
import { archiveStream, SpoolFile, spooled, writeJsonList, type SpooledEntry } from './bundle-archive.js';
import { bundleInProgress } from './debug.errors.js';
import { DebugRepository } from './debug.repository.js';
import { collectLogTail, type LogTail } from './log-tail.js';

export const BUNDLE_CONTENT_TYPE = 'application/gzip';
const BUNDLE_VERSION = 1;
/** The logs of this long before the bundle. */
const LOG_WINDOW_MS = 24 * 3_600_000;
/** jobs.json: the newest jobs of every owner, each with the end of its output. */
export const BUNDLE_JOBS = 1000;
export const BUNDLE_JOB_LOG_LINES = 20;
/** Rows read per query: memory holds one page, the database is never held while the client reads. */
const PAGE = 100;
/** A bundle takes seconds: what a second caller is told to wait. */
const RETRY_AFTER_SECONDS = 10;

export interface DebugBundle {
  fileName: string;
  stream: Readable;
}

/** `debug-bundle-20261124T023900Z.tar.gz`: ISO 8601 basic format, UTC, safe in any file system. */
export const bundleFileName = (at: Date): string =>
  `debug-bundle-${at
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '')}.tar.gz`;

/**
 * The debug bundle (docs/operations.md): this replica's logs of the last 24 hours, the sanitized
 * configuration, every owner's workers and newest jobs, a /metrics snapshot and system figures, as
 * a streamed tar.gz. For the operator's admins only, one at a time per replica, audited.
 */
@Injectable()
export class DebugService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('debug');
  private readonly loopDelay: IntervalHistogram = monitorEventLoopDelay({ resolution: 20 });
  private loopDelaySince = new Date();
  private busy = false;

  constructor(
    private readonly repository: DebugRepository,
    private readonly config: AppConfig,
    private readonly leases: Leases,
    private readonly audit: AuditService,
    private readonly settings: SettingsService,
    private readonly workers: WorkersService,
    private readonly connectivity: ConnectivityService,
    private readonly jobs: JobsService,
    private readonly metricStore: MetricStoreService,
    private readonly health: OrchestratorHealthService,
  ) {}

  /** Where bundles are spooled; what a crashed bundle left there goes at start. */
  private get spoolRoot(): string {
    return join(this.config.dataDir, 'debug-bundles');
  }

  async onModuleInit(): Promise<void> {
    await rm(this.spoolRoot, { recursive: true, force: true });
    makePrivateDir(this.spoolRoot);
    this.loopDelay.enable();
    this.loopDelaySince = new Date();
  }

  onModuleDestroy(): void {
    this.loopDelay.disable();
  }

  /**
   * Gathers every entry, then answers the archive as a stream. A failure while gathering is an
   * ordinary error answer; the replica's one bundle slot is freed when the stream closes, whether
   * the client read it all or went away.
   */
  async bundle(caller: Caller): Promise<DebugBundle> {
    assertOperator(caller);
    if (this.busy) throw bundleInProgress(RETRY_AFTER_SECONDS);
    this.busy = true;
    let dir: string | undefined;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.busy = false;
      if (dir !== undefined)
        rm(dir, { recursive: true, force: true }).catch((err: unknown) =>
          this.logger.warn({ err }, 'debug bundle spool not removed'),
        );
    };
    try {
      const createdAt = new Date();
      const fileName = bundleFileName(createdAt);
      dir = await mkdtemp(join(this.spoolRoot, 'bundle-'));
      const { manifest, entries } = await this.gather(caller, dir, createdAt, fileName);
      await this.audit.record({
        action: 'debug.bundle_created',
        target: fileName,
        details: {
          replica: this.leases.holder,
          log_bytes: manifest.logs.bytes,
          truncated: manifest.entries.filter((e) => e.truncated).map((e) => e.name),
        },
      });
      this.logger.log(
        { file_name: fileName, entries: entries.length, log_bytes: manifest.logs.bytes },
        'debug bundle streaming',
      );
      const stream = archiveStream(
        Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`),
        entries,
        createdAt,
        (err) => this.logger.warn({ err, file_name: fileName }, 'debug bundle not sent whole'),
      );
      stream.once('close', release);
      return { fileName, stream };
    } catch (err) {
      release();
      throw err;
    }
  }

  private async gather(
    caller: Caller,
    dir: string,
    createdAt: Date,
    fileName: string,
  ): Promise<{ manifest: DebugBundleManifest; entries: SpooledEntry[] }> {
    const cuts: DebugBundleCut[] = [];
    const logs = await this.writeLogs(join(dir, 'service.jsonl'), createdAt);
    cuts.push(...logCuts(logs));
    const entries: SpooledEntry[] = [
      await spooled(
        'logs/service.jsonl',
        join(dir, 'service.jsonl'),
        "This replica's JSON log lines of the 24 hours before created_at, oldest first",
        logs.truncated,
      ),
    ];
    entries.push(
      await spooled(
        'config.json',
        await this.writeConfig(join(dir, 'config.json'), createdAt),
        'Every setting with its value and source; secrets [REDACTED]',
      ),
    );
    entries.push(
      await spooled(
        'workers.json',
        await this.writeWorkers(caller, join(dir, 'workers.json'), createdAt),
        "Every owner's workers with status, connection, last heartbeat, metrics and connectivity",
      ),
    );
    const jobs = await this.writeJobs(caller, join(dir, 'jobs.json'), createdAt);
    cuts.push(...jobs.cuts);
    entries.push(
      await spooled(
        'jobs.json',
        jobs.path,
        `The ${BUNDLE_JOBS} newest jobs of every owner, each with its last ${BUNDLE_JOB_LOG_LINES} log lines`,
        jobs.truncated,
      ),
    );
    entries.push(
      await spooled(
        'metrics.txt',
        await this.writeMetrics(join(dir, 'metrics.txt')),
        "This replica's /metrics (Prometheus text exposition) when the bundle was made",
      ),
    );
    const replicas = await this.replicas(createdAt);
    entries.push(
      await spooled(
        'system.json',
        await this.writeSystem(join(dir, 'system.json'), createdAt),
        'Node and OS versions, memory, load, event-loop delay, open handles, database size and pool',
      ),
    );
    const manifest: DebugBundleManifest = {
      bundle_version: BUNDLE_VERSION,
      created_at: createdAt.toISOString(),
      file_name: fileName,
      service: { name: SERVICE_NAME, version: SERVICE_VERSION },
      replica: replicas.self,
      other_replicas: replicas.others,
      logs: { replica: this.leases.holder, ...logs },
      entries: entries.map(({ path: _path, ...entry }) => entry),
      cuts,
    };
    return { manifest, entries };
  }

  private writeLogs(path: string, createdAt: Date): Promise<LogTail> {
    return collectLogTail({
      dir: logDirectory(this.config.dataDir),
      basename: LOG_FILE_BASENAME,
      since: new Date(createdAt.getTime() - LOG_WINDOW_MS),
      until: createdAt,
      capBytes: this.config.debugBundleLogMaxBytes,
      outPath: path,
    });
  }

  /** Every variable (default, environment or .env), and the runtime settings stored in the database. */
  private async writeConfig(path: string, createdAt: Date): Promise<string> {
    const variables = this.config.describe();
    const logLevel = this.settings.get();
    const configured = variables.find((v) => v.name === 'LOG_LEVEL');
    const settings = [
      ...variables,
      {
        name: 'log_level',
        value: logLevel.log_level,
        // Nothing stored: the level is LOG_LEVEL's, from wherever that came.
        source: logLevel.updated_at === null ? (configured?.source ?? 'default') : 'stored',
        sensitive: false,
        updated_at: logLevel.updated_at,
        description:
          'The runtime log level (PATCH .../orchestrator/settings); a stored value wins over LOG_LEVEL',
      },
    ];
    const file = new SpoolFile(path);
    try {
      await file.write(
        `${JSON.stringify(
          {
            generated_at: createdAt.toISOString(),
            replica: this.leases.holder,
            redaction:
              'Sensitive values are "[REDACTED]"; URLs keep their host and path with the password redacted.',
            settings,
          },
          null,
          2,
        )}\n`,
      );
    } finally {
      await file.close();
    }
    return path;
  }

  private async writeWorkers(caller: Caller, path: string, createdAt: Date): Promise<string> {
    let count = 0;
    const workers = this.workers;
    const connectivity = this.connectivity;
    async function* pages() {
      let after: Cursor | undefined;
      for (;;) {
        const page = await workers.everyOwner(caller, PAGE, after);
        if (page.length === 0) return;
        const links = await connectivity.linksFrom(
          caller,
          page.map((w) => w.id),
        );
        count += page.length;
        yield page.map((w) => ({
          ...w,
          connectivity: links.filter((l) => l.from === w.id).map(({ from: _from, ...link }) => link),
        }));
        if (page.length < PAGE) return;
        const last = page[page.length - 1];
        after = { at: last.created_at, id: last.id };
      }
    }
    await writeJsonList(
      path,
      { generated_at: createdAt.toISOString(), replica: this.leases.holder },
      'workers',
      pages(),
      () => ({ count }),
    );
    return path;
  }

  private async writeJobs(
    caller: Caller,
    path: string,
    createdAt: Date,
  ): Promise<{ path: string; truncated: boolean; cuts: DebugBundleCut[] }> {
    const { total, ids } = await this.jobs.newestEveryOwner(caller, BUNDLE_JOBS);
    let longLogs = 0;
    let linesLeftOut = 0;
    const jobs = this.jobs;
    async function* pages() {
      for (let i = 0; i < ids.length; i += PAGE) {
        const page = await jobs.withLogTails(caller, ids.slice(i, i + PAGE), BUNDLE_JOB_LOG_LINES);
        for (const job of page) {
          if (job.log_lines_total > job.log_tail.length) {
            longLogs++;
            linesLeftOut += job.log_lines_total - job.log_tail.length;
          }
        }
        yield page;
      }
    }
    await writeJsonList(
      path,
      {
        generated_at: createdAt.toISOString(),
        limit: BUNDLE_JOBS,
        log_lines_per_job: BUNDLE_JOB_LOG_LINES,
        total_jobs: total,
      },
      'jobs',
      pages(),
      () => ({ count: Math.min(total, ids.length) }),
    );
    const cuts: DebugBundleCut[] = [];
    if (total > ids.length)
      cuts.push({
        entry: 'jobs.json',
        reason: 'limit',
        detail: `Only the ${ids.length} newest of ${total} jobs are in the bundle`,
        items: total - ids.length,
      });
    if (longLogs > 0)
      cuts.push({
        entry: 'jobs.json',
        reason: 'log_tail',
        detail: `${longLogs} jobs have more than ${BUNDLE_JOB_LOG_LINES} log lines; only their last ${BUNDLE_JOB_LOG_LINES} are in the bundle (GET .../jobs/{id}/logs has all)`,
        items: longLogs,
        lines: linesLeftOut,
      });
    return { path, truncated: cuts.length > 0, cuts };
  }

  private async writeMetrics(path: string): Promise<string> {
    const file = new SpoolFile(path);
    try {
      await file.write(await register.metrics());
    } finally {
      await file.close();
    }
    return path;
  }

  private async writeSystem(path: string, createdAt: Date): Promise<string> {
    const memory = process.memoryUsage();
    const [load1, load5, load15] = os.loadavg();
    const resources = process.getActiveResourcesInfo();
    const byType: Record<string, number> = {};
    for (const type of resources) byType[type] = (byType[type] ?? 0) + 1;
    const ms = (ns: number): number => Math.round(ns / 1e4) / 100;
    const cpus = os.cpus();
    const system = {
      generated_at: createdAt.toISOString(),
      replica: this.leases.holder,
      hostname: os.hostname(),
      pid: process.pid,
      uptime_seconds: Math.round(process.uptime()),
      service: { ...this.health.info(), health: await this.health.health() },
      node: { version: process.version, versions: process.versions },
      os: {
        type: os.type(),
        platform: process.platform,
        release: os.release(),
        version: os.version(),
        arch: process.arch,
        uptime_seconds: Math.round(os.uptime()),
        cpus: cpus.length,
        cpu_model: cpus[0]?.model ?? null,
        total_memory_bytes: os.totalmem(),
        free_memory_bytes: os.freemem(),
        load_average: { '1m': load1, '5m': load5, '15m': load15 },
      },
      memory: {
        rss_bytes: memory.rss,
        heap_total_bytes: memory.heapTotal,
        heap_used_bytes: memory.heapUsed,
        external_bytes: memory.external,
        array_buffers_bytes: memory.arrayBuffers,
      },
      event_loop_delay_ms: {
        since: this.loopDelaySince.toISOString(),
        min: ms(this.loopDelay.min),
        mean: ms(this.loopDelay.mean),
        p50: ms(this.loopDelay.percentile(50)),
        p99: ms(this.loopDelay.percentile(99)),
        max: ms(this.loopDelay.max),
        stddev: ms(this.loopDelay.stddev),
      },
      open_handles: { total: resources.length, by_type: byType },
      database: {
        embedded: this.config.databaseUrl === undefined,
        ...(await this.repository.database()),
        pool: this.repository.pool(),
      },
    };
    const file = new SpoolFile(path);
    try {
      await file.write(`${JSON.stringify(system, null, 2)}\n`);
    } finally {
      await file.close();
    }
    return path;
  }

  /**
   * This replica and the others seen alive: holders of agent streams and leases in the shared
   * tables, and replicas that stored their own metrics in the last three scrape intervals (every
   * replica does, so one with neither agents nor leases is seen too).
   */
  private async replicas(now: Date): Promise<{ self: DebugBundleReplica; others: DebugBundleReplica[] }> {
    const seen = new Map<string, DebugBundleReplica>();
    const replica = (id: string): DebugBundleReplica => {
      let found = seen.get(id);
      if (!found) {
        found = { id, agent_sessions: 0, leases: [], last_self_scrape: null };
        seen.set(id, found);
      }
      return found;
    };
    replica(this.leases.holder);
    const sightings = await this.repository.replicaSightings(SESSION_TTL_MS);
    for (const s of sightings.sessions) replica(s.replica).agent_sessions = s.agents;
    for (const l of sightings.leases) replica(l.holder).leases = l.names;
    const until = now.getTime();
    const scrapes = await this.metricStore.select(
      OPERATOR_OWNER,
      [
        { type: '=', name: '__name__', value: 'up' },
        { type: '=', name: 'job', value: SELF_JOB },
      ],
      until - 3 * this.config.metrics.scrapeIntervalMs,
      until,
    );
    for (const series of scrapes) {
      const instance = series.labels.find((l) => l.name === 'instance')?.value;
      const last = series.timestamps[series.timestamps.length - 1];
      if (instance !== undefined && last !== undefined)
        replica(instance).last_self_scrape = new Date(last).toISOString();
    }
    const self = seen.get(this.leases.holder)!;
    seen.delete(this.leases.holder);
    return { self, others: [...seen.values()] };
  }
}

/** The manifest's account of what the logs part left out. */
function logCuts(logs: LogTail): DebugBundleCut[] {
  const entry = 'logs/service.jsonl' as const;
  const cuts: DebugBundleCut[] = [];
  const { cut } = logs;
  if (cut.size_cap.lines > 0 || cut.files_beyond_cap.files > 0)
    cuts.push({
      entry,
      reason: 'size_cap',
      detail:
        `The logs of the window hold more than DEBUG_BUNDLE_LOG_MAX_BYTES (${logs.cap_bytes} bytes): ` +
        `the newest lines were kept, ${cut.size_cap.lines} older lines (${cut.size_cap.bytes} bytes) ` +
        `and ${cut.files_beyond_cap.files} older files (${cut.files_beyond_cap.bytes} bytes) left out`,
      lines: cut.size_cap.lines,
      bytes: cut.size_cap.bytes + cut.files_beyond_cap.bytes,
    });
  if (cut.unparseable.lines > 0)
    cuts.push({
      entry,
      reason: 'unparseable',
      detail: 'Lines without a readable time field were left out',
      lines: cut.unparseable.lines,
      bytes: cut.unparseable.bytes,
    });
  if (cut.files_vanished > 0)
    cuts.push({
      entry,
      reason: 'rotated_away',
      detail: `${cut.files_vanished} log files were removed by rotation while the bundle read them`,
      items: cut.files_vanished,
    });
  return cuts;
}
