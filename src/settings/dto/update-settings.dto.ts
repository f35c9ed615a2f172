import { IsIn, IsOptional, IsString } from 'class-validator';
import { LOG_LEVELS, type LogLevel } from '../../config/config.js';

export class UpdateSettingsDto {
  @IsOptional()
  @IsString()
  @IsIn(LOG_LEVELS, { message: `log_level must be one of ${LOG_LEVELS.join(', ')}` })
  log_level?: LogLevel;
}
