import { IsIn, IsString } from 'class-validator';
import { Optional } from '../../common/optional.js';
import { LOG_LEVELS, type LogLevel } from '../../config/config.js';
import type { UpdateSettingsRequest } from '../../../contracts/api/settings.js';

export class UpdateSettingsDto implements UpdateSettingsRequest {
  @Optional()
  @IsString()
  @IsIn(LOG_LEVELS, { message: `log_level must be one of ${LOG_LEVELS.join(', ')}` })
  log_level?: LogLevel;
}
