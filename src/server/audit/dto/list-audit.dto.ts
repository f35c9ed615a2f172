import { IsOptional, IsString, Matches } from 'class-validator';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListAuditQuery } from '../../../contracts/api/audit.js';

export class ListAuditDto extends PageQueryDto implements ListAuditQuery {
  @IsOptional()
  @IsString()
  @Matches(/^[a-z_.]{1,64}$/)
  action?: string;
}
