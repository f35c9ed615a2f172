import { IsBoolean, IsObject, IsOptional, IsString, Matches } from 'class-validator';
import type { CreateJoinTokenRequest } from '../../../contracts/api/join-tokens.js';

export class CreateJoinTokenDto implements CreateJoinTokenRequest {
  /** Lifetime as duration text (`1h`, `7d`); JOIN_TOKEN_TTL when absent. */
  @IsOptional()
  @IsString()
  @Matches(/^(\d+(ms|s|m|h|d))+$/, { message: 'ttl must be a duration such as 30m, 24h or 7d' })
  ttl?: string;

  @IsOptional()
  @IsBoolean()
  pre_approved?: boolean;

  @IsOptional()
  @IsObject()
  labels?: Record<string, string>;
}
