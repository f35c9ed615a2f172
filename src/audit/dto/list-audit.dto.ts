import { IsOptional, IsString, Matches } from 'class-validator';
import { PageQueryDto } from '../../common/pagination.js';

export class ListAuditDto extends PageQueryDto {
  @IsOptional()
  @IsString()
  @Matches(/^[a-z_.]{1,64}$/)
  action?: string;
}
