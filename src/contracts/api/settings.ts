// `.../orchestrator/settings`: runtime settings.
import type { Timestamp } from './common.js';

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

export interface SettingsView {
  log_level: LogLevel;
  /** When the stored setting last changed; null while the configured default applies. */
  updated_at: Timestamp | null;
}

export interface UpdateSettingsRequest {
  log_level?: LogLevel;
}
