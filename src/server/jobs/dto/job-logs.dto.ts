import { Type } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';
import { Optional } from '../../common/optional.js';
import type { JobLogsQuery } from '../../../contracts/api/jobs.js';

export class JobLogsDto implements JobLogsQuery {
  /** The `next_after` of the previous page: lines after that one. */
  @Optional()
  @Type(() => Number)
  @IsInt()
  @Min(0)
  after?: number;

  @Optional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(5000)
  limit?: number;
}
