import { IsOptional, IsString, Matches } from 'class-validator';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListClientsQuery } from '../../../contracts/api/clients.js';
import { OWNER_PATTERN } from './create-client.dto.js';

export class ListClientsDto extends PageQueryDto implements ListClientsQuery {
  /** Operator only: another owner's clients. */
  @IsOptional()
  @IsString()
  @Matches(OWNER_PATTERN)
  owner?: string;
}
