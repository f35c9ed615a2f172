import { Controller, Get, HttpStatus, Res, ServiceUnavailableException } from '@nestjs/common';
import { HealthCheckService, HealthIndicatorService, type HealthCheckResult } from '@nestjs/terminus';
import type { Response } from 'express';
import { Public } from '../auth/auth.decorators.js';
import { StartupState } from '../common/startup-state.js';
import { DatabaseHealth } from './database.health.js';
import { ApiDoc, jsonAnswer } from '../openapi/api-doc.js';

/**
 * Readiness and startup probes; terminus bodies, 503 when failing. No token needed. Liveness is
 * answered ahead of the framework by the liveness responder (liveness.ts).
 */
@Controller('health')
@Public()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: DatabaseHealth,
    private readonly startup: StartupState,
  ) {}

  @Get('ready')
  @ApiDoc({
    summary: 'Readiness probe',
    tag: 'Health',
    description:
      '200 while the database answers `SELECT 1` within READINESS_TIMEOUT; `details.database` holds `status` and `responseTime`.',
    responses: {
      200: 'ProbeResult',
      503: jsonAnswer('ProbeResult', 'Not ready.'),
    },
  })
  ready(@Res({ passthrough: true }) res: Response): Promise<HealthCheckResult> {
    return this.run(res, [() => this.database.check()]);
  }

  @Get('startup')
  @ApiDoc({
    summary: 'Startup probe',
    tag: 'Health',
    description:
      '200 once migrations are applied and every listener is up; `details.startup` holds `migrations` and `listeners`.',
    responses: {
      200: 'ProbeResult',
      503: jsonAnswer('ProbeResult', 'Still starting.'),
    },
  })
  started(@Res({ passthrough: true }) res: Response): Promise<HealthCheckResult> {
    return this.run(res, [
      () => {
        const state = this.startup.status();
        const session = this.indicators.check('startup');
        const data = { migrations: state.migrations, listeners: state.listeners };
        return state.started ? session.up(data) : session.down(data);
      },
    ]);
  }

  private async run(
    res: Response,
    checks: Parameters<HealthCheckService['check']>[0],
  ): Promise<HealthCheckResult> {
    try {
      return await this.health.check(checks);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      res.status(HttpStatus.SERVICE_UNAVAILABLE);
      return err.getResponse() as HealthCheckResult;
    }
  }
}
