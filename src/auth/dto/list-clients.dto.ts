import { IsOptional, IsString, Matches } from 'class-validator';
import { PageQueryDto } from '../../common/pagination.js';
import { OWNER_PATTERN } from './create-client.dto.js';

export class ListClientsDto extends PageQueryDto {
  /** Operator only: another owner's clients. */
  @IsOptional()
  @IsString()
  @Matches(OWNER_PATTERN)
  owner?: string;
}
