import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { every } from '../common/periodic.js';
import { AuditService } from '../audit/audit.service.js';
import type { Caller } from '../auth/auth.decorators.js';
import { assertOperator } from '../auth/operator.js';
import { AppConfig, LOG_LEVELS, type LogLevel } from '../config/config.js';
import type { SettingsView } from '../../contracts/api/settings.js';
import { LogLevelService } from '../logging/log-level.service.js';
import type { UpdateSettingsDto } from './dto/update-settings.dto.js';
import { noSettingsGiven } from './settings.errors.js';
import { SettingsRepository } from './settings.repository.js';

const LOG_LEVEL_KEY = 'log_level';

/**
 * Runtime settings. A change is stored in the database and applied at once; the stored value is
 * re-applied at start and re-read every SETTINGS_REFRESH_INTERVAL so other replicas follow.
 */
@Injectable()
export class SettingsService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('settings');
  private updatedAt: Date | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly repository: SettingsRepository,
    private readonly logLevel: LogLevelService,
    private readonly config: AppConfig,
    private readonly audit: AuditService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.refresh();
    this.timer = every(this.logger, 'settings-refresh', this.config.settingsRefreshIntervalMs, () =>
      this.refresh(),
    );
  }

  onModuleDestroy(): void {
    clearInterval(this.timer);
  }

  get(): SettingsView {
    return { log_level: this.logLevel.current, updated_at: this.updatedAt?.toISOString() ?? null };
  }

  async update(caller: Caller, change: UpdateSettingsDto): Promise<SettingsView> {
    assertOperator(caller);
    if (change.log_level === undefined) throw noSettingsGiven();
    const previous = this.logLevel.current;
    const stored = await this.repository.put(LOG_LEVEL_KEY, change.log_level);
    this.apply(stored.value, stored.updatedAt);
    this.logger.log({ setting: LOG_LEVEL_KEY, from: previous, to: stored.value }, 'log level changed');
    await this.audit.record({
      action: 'settings.changed',
      target: LOG_LEVEL_KEY,
      details: { from: previous, to: stored.value },
    });
    return this.get();
  }

  /** Applies the stored level, or the configured LOG_LEVEL when none is stored. */
  private async refresh(): Promise<void> {
    const stored = await this.repository.get<LogLevel>(LOG_LEVEL_KEY);
    if (stored === undefined) {
      this.apply(this.config.logLevel, null);
    } else if (stored.updatedAt.getTime() !== this.updatedAt?.getTime()) {
      // A value no level: stored before requests were held to the levels (a JSON null got through).
      // The service starts and runs on LOG_LEVEL instead of failing, and says so once.
      if (!(LOG_LEVELS as readonly unknown[]).includes(stored.value)) {
        this.logger.warn(
          {
            setting: LOG_LEVEL_KEY,
            stored: String(stored.value).slice(0, 32),
            applied: this.config.logLevel,
          },
          'the stored log level is not a level: LOG_LEVEL applies until a valid one is set',
        );
        this.apply(this.config.logLevel, stored.updatedAt);
        return;
      }
      this.apply(stored.value, stored.updatedAt);
    }
  }

  private apply(level: LogLevel, updatedAt: Date | null): void {
    this.logLevel.apply(level);
    this.updatedAt = updatedAt;
  }
}
