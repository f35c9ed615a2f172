import { IsIn, IsObject, IsString, IsUUID, Length, Matches, MaxLength } from 'class-validator';
import { Optional } from '../../common/optional.js';
import type { EnrollmentStatusRequest, EnrollRequest } from '../../../contracts/api/workers.js';

export const DRIVERS = ['docker', 'process'] as const;

export class EnrollDto implements EnrollRequest {
  @IsString()
  @Length(10, 512)
  token: string;

  @IsString()
  @Length(100, 8192)
  csr: string;

  @IsString()
  @Length(1, 253)
  hostname: string;

  /** The operator's --address for this node; peers probe it there instead of where it connects from. */
  @Optional()
  @IsString()
  @Length(1, 255)
  address?: string;

  @IsString()
  @Length(1, 64)
  os: string;

  @IsString()
  @Length(1, 64)
  arch: string;

  @IsString()
  @Length(1, 64)
  version: string;

  @IsIn(DRIVERS)
  driver: (typeof DRIVERS)[number];

  @Optional()
  @IsString()
  @Matches(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, { message: 'name must be a DNS label' })
  name?: string;

  @Optional()
  @IsObject()
  labels?: Record<string, string>;

  /** The id this agent had before the service deleted it; such an agent enrolls as pending. */
  @Optional()
  @IsUUID()
  previous_worker_id?: string;
}

export class EnrollmentStatusDto implements EnrollmentStatusRequest {
  @IsUUID()
  worker_id: string;

  @IsString()
  @MaxLength(256)
  enrollment_secret: string;
}
