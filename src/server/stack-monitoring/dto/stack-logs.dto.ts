import { Transform, Type } from 'class-transformer';
import { IsBoolean, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import type { StackLogsQuery } from '../../../contracts/api/stack-logs.js';
import { DNS_LABEL } from '../../stacks/definition/service-fields.js';
import { MAX_LOG_LIMIT } from '../log-query.js';

/** `?service=&since=&until=&limit=&follow=`; the times are read by log-query.ts. */
export class StackLogsDto implements StackLogsQuery {
  @IsOptional()
  @IsString()
  @Matches(DNS_LABEL, { message: 'service must be a service name (a DNS label)' })
  service?: string;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  since?: string;

  @IsOptional()
  @IsString()
  @MaxLength(64)
  until?: string;

  @IsOptional()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(MAX_LOG_LIMIT)
  limit?: number;

  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'follow must be true or false' })
  follow?: boolean;
}
