import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/config.js';

/** A `SELECT 1` round trip bounded by READINESS_TIMEOUT. */
@Injectable()
export class DatabaseHealth {
  constructor(
    private readonly dataSource: DataSource,
    private readonly indicators: HealthIndicatorService,
    private readonly config: AppConfig,
  ) {}

  check() {
    return this.indicators
      .check('database')
      .attempt(async () => {
        await this.dataSource.query('SELECT 1');
      })
      .withTimeout(this.config.readinessTimeoutMs);
  }

  /** The orchestrator health's word for the database: `ok`, or why not. */
  async status(): Promise<string> {
    const result = await this.check();
    const database = result.database as { status: string; message?: string };
    if (database.status === 'up') return 'ok';
    return /timeout|timed out/i.test(database.message ?? '') ? 'timeout' : 'unreachable';
  }
}
