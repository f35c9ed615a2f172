import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { ServiceStateMsg, StateReportMsg } from '../../contracts/agent-protocol/index.js';
import { AgentSessions, type AgentStateHandler } from '../agent-gateway/agent-sessions.js';
import { SessionDirectory } from '../agent-gateway/session-directory.js';
import { every } from '../common/periodic.js';
import type { WorkerReport } from './stack-health.js';

/** Services per state report taken from an agent. */
const MAX_REPORTED_SERVICES = 2000;
/** Reports are written and read this often. */
const SYNC_MS = 1_000;
/**
 * Writers of reports take this transaction lock, so versions commit in the order drawn and a reader
 * that saw version n never later finds a smaller one committed.
 */
export const REPORT_WRITE_LOCK_KEY = 726_352_635;

interface StoredReport {
  stack_ids: string[];
  services: ServiceStateMsg[];
  last_jobs: Record<string, string>;
}

/**
 * The latest state report of each worker (an AgentStateHandler), as stack health and drift read it.
 * The replica holding an agent's stream keeps its reports in memory and writes the changed ones to
 * `worker_reports` every second; every replica reads the rows that changed since it last looked, so
 * a report is the same through any replica within about a second. A report counts only while some
 * replica holds the worker's stream (SessionDirectory): health reads unknown otherwise.
 */
@Injectable()
export class StackReportsService implements AgentStateHandler, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('stacks');
  /** Reports from agents whose stream this replica holds. */
  private readonly local = new Map<string, WorkerReport>();
  private readonly dirty = new Set<string>();
  /** Every worker's last stored report, as read from the database. */
  private readonly shared = new Map<string, WorkerReport>();
  private version = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sessions: AgentSessions,
    private readonly directory: SessionDirectory,
    private readonly dataSource: DataSource,
  ) {}

  /** The first read completes before the service answers: a new replica knows every report at once. */
  async onModuleInit(): Promise<void> {
    this.sessions.addStateHandler(this);
    await this.sync();
    this.timer = every(this.logger, 'worker-reports', SYNC_MS, () => this.sync());
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.write().catch((err: unknown) => this.logger.warn({ err }, 'final state reports not written'));
  }

  /** The latest report of a worker while its agent is connected to some replica. */
  reportOf(workerId: string): WorkerReport | undefined {
    if (this.sessions.isConnected(workerId)) return this.local.get(workerId);
    return this.directory.isConnected(workerId) ? this.shared.get(workerId) : undefined;
  }

  state(workerId: string, report: StateReportMsg): void {
    this.local.set(workerId, {
      at: new Date(),
      stackIds: new Set((report.stack_ids ?? []).slice(0, MAX_REPORTED_SERVICES)),
      services: (report.services ?? []).slice(0, MAX_REPORTED_SERVICES),
      lastJobs: report.last_jobs ?? {},
    });
    this.dirty.add(workerId);
  }

  disconnected(workerId: string): void {
    this.local.delete(workerId);
    this.dirty.delete(workerId);
  }

  /** Writes this replica's changed reports, then reads every report changed since the last look. */
  async sync(): Promise<void> {
    await this.write();
    const rows = await this.dataSource.query<
      { worker_id: string; reported_at: Date; report: StoredReport; version: string }[]
    >(
      `SELECT worker_id, reported_at, report, version FROM worker_reports WHERE version > $1 ORDER BY version`,
      [this.version],
    );
    for (const row of rows) {
      this.shared.set(row.worker_id, {
        at: new Date(row.reported_at),
        stackIds: new Set(row.report.stack_ids),
        services: row.report.services,
        lastJobs: row.report.last_jobs,
      });
      this.version = Math.max(this.version, Number(row.version));
    }
  }

  private async write(): Promise<void> {
    if (this.dirty.size === 0) return;
    const ids = [...this.dirty].filter((id) => this.local.has(id));
    this.dirty.clear();
    const reports = ids.map((id) => this.local.get(id)!);
    try {
      await this.dataSource.transaction(async (m) => {
        await m.query('SELECT pg_advisory_xact_lock($1)', [REPORT_WRITE_LOCK_KEY]);
        await m.query(
          `INSERT INTO worker_reports (worker_id, reported_at, report)
         SELECT w.id, r.at, r.report FROM unnest($1::uuid[], $2::timestamptz[], $3::jsonb[]) AS r (id, at, report)
           JOIN workers w ON w.id = r.id
         ON CONFLICT (worker_id) DO UPDATE SET reported_at = EXCLUDED.reported_at,
           report = EXCLUDED.report, version = nextval('worker_reports_version')`,
          [
            ids,
            reports.map((r) => r.at),
            reports.map((r) =>
              JSON.stringify({ stack_ids: [...r.stackIds], services: r.services, last_jobs: r.lastJobs }),
            ),
          ],
        );
      });
    } catch (err) {
      for (const id of ids) this.dirty.add(id);
      throw err;
    }
  }
}
