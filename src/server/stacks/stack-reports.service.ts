import { Injectable, OnModuleInit } from '@nestjs/common';
import type { StateReportMsg } from '../../contracts/agent-protocol/index.js';
import { AgentSessions, type AgentStateHandler } from '../agent-gateway/agent-sessions.js';
import type { WorkerReport } from './stack-health.js';

/** Services per state report taken from an agent. */
const MAX_REPORTED_SERVICES = 2000;

/**
 * The latest state report of each worker connected to this replica (an AgentStateHandler), as stack
 * health and drift read it. A worker's report is forgotten when its stream ends.
 */
@Injectable()
export class StackReportsService implements AgentStateHandler, OnModuleInit {
  private readonly reports = new Map<string, WorkerReport>();

  constructor(private readonly sessions: AgentSessions) {}

  onModuleInit(): void {
    this.sessions.addStateHandler(this);
  }

  /** The latest report of a worker, if it has sent one since it connected. */
  reportOf(workerId: string): WorkerReport | undefined {
    return this.reports.get(workerId);
  }

  state(workerId: string, report: StateReportMsg): void {
    this.reports.set(workerId, {
      at: new Date(),
      stackIds: new Set((report.stack_ids ?? []).slice(0, MAX_REPORTED_SERVICES)),
      services: (report.services ?? []).slice(0, MAX_REPORTED_SERVICES),
      lastJobs: report.last_jobs ?? {},
    });
  }

  disconnected(workerId: string): void {
    this.reports.delete(workerId);
  }
}
