import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/config.js';
import { formatDuration } from '../common/duration.js';
import { StartupState } from '../common/startup-state.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../common/version.js';
import { DatabaseHealth } from './database.health.js';
import type { CheckName, OrchestratorHealth, ServerInfo } from '../../contracts/api/orchestrator.js';

export type CheckFn = () => Promise<string> | string;

export const NOT_CONFIGURED = 'not_configured';

/**
 * Composes `GET .../orchestrator/health` and `.../info`. Features that own a check (the agent
 * gateway: `grpc`, the workers module: `workers`) register it; until then it reads `not_configured`.
 */
@Injectable()
export class OrchestratorHealthService {
  private readonly checks = new Map<Exclude<CheckName, 'database'>, CheckFn>();
  private caFingerprint: () => string | null = () => null;
  private agentEndpoint: () => string = () => this.config.agentEndpoint;
  /** The start time as /info shows it, formatted once. */
  private readonly startedAt: string;

  constructor(
    private readonly database: DatabaseHealth,
    private readonly startup: StartupState,
    private readonly config: AppConfig,
  ) {
    this.startedAt = startup.startedAt.toISOString();
  }

  registerCheck(name: Exclude<CheckName, 'database'>, check: CheckFn): void {
    this.checks.set(name, check);
  }

  registerCaFingerprint(read: () => string | null): void {
    this.caFingerprint = read;
  }

  /** The agent gateway reports the endpoint it really listens on (AGENT_PORT may be 0 in tests). */
  registerAgentEndpoint(read: () => string): void {
    this.agentEndpoint = read;
  }

  /** `unhealthy` when the database fails (the service cannot work), `degraded` when another check does. */
  async health(): Promise<OrchestratorHealth> {
    const run = async (name: Exclude<CheckName, 'database'>): Promise<string> => {
      const check = this.checks.get(name);
      if (!check) return NOT_CONFIGURED;
      try {
        return await check();
      } catch {
        return 'error';
      }
    };
    const [database, grpc, workers] = await Promise.all([
      this.database.status(),
      run('grpc'),
      run('workers'),
    ]);
    const checks = { database, grpc, workers };
    const status =
      database !== 'ok'
        ? 'unhealthy'
        : Object.values(checks).every((v) => v === 'ok')
          ? 'healthy'
          : 'degraded';
    return { status, version: SERVICE_VERSION, uptime: this.uptime(), checks };
  }

  info(): ServerInfo {
    return {
      name: SERVICE_NAME,
      version: SERVICE_VERSION,
      mode: 'self-hosted',
      api_versions: ['v1'],
      started_at: this.startedAt,
      uptime: this.uptime(),
      agent_endpoint: this.agentEndpoint(),
      ca_fingerprint: this.caFingerprint(),
    };
  }

  private uptime(): string {
    return formatDuration(Date.now() - this.startup.startedAt.getTime());
  }
}
