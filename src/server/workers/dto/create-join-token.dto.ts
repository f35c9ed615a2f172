import { IsBoolean, IsObject, IsString, Matches } from 'class-validator';
import { Optional } from '../../common/optional.js';
import type { CreateJoinTokenRequest } from '../../../contracts/api/join-tokens.js';

export class CreateJoinTokenDto implements CreateJoinTokenRequest {
  /** Lifetime as duration text (`1h`, `7d`); JOIN_TOKEN_TTL when absent. */
  @Optional()
  @IsString()
  @Matches(/^(\d+(ms|s|m|h|d))+$/, { message: 'ttl must be a duration such as 30m, 24h or 7d' })
  ttl?: string;

  @Optional()
  @IsBoolean()
  pre_approved?: boolean;

  @Optional()
  @IsObject()
  labels?: Record<string, string>;
}
