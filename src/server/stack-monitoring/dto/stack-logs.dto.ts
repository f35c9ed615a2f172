import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsInt, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { Optional } from '../../common/optional.js';
import type { StackLogsQuery } from '../../../contracts/api/stack-logs.js';
import { DNS_LABEL } from '../../stacks/definition/service-fields.js';
import { MAX_LOG_LIMIT } from '../log-query.js';

/** `?service=&since=&until=&limit=&follow=`; the times are read by log-query.ts. */
export class StackLogsDto implements StackLogsQuery {
  @Optional()
  @IsString()
  @Matches(DNS_LABEL, { message: 'service must be a service name (a DNS label)' })
  service?: string;

  @Optional()
  @IsString()
  @MaxLength(64)
  since?: string;

  @Optional()
  @IsString()
  @MaxLength(64)
  until?: string;

  @Optional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_LOG_LIMIT)
  limit?: number;

  @Optional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'follow must be true or false' })
  follow?: boolean;
}
