import { IsString, Matches } from 'class-validator';
import { Optional } from '../../common/optional.js';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListAuditQuery } from '../../../contracts/api/audit.js';

export class ListAuditDto extends PageQueryDto implements ListAuditQuery {
  @Optional()
  @IsString()
  @Matches(/^[a-z_.]{1,64}$/)
  action?: string;
}
