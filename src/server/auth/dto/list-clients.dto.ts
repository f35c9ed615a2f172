import { IsString, Matches } from 'class-validator';
import { Optional } from '../../common/optional.js';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListClientsQuery } from '../../../contracts/api/clients.js';
import { OWNER_PATTERN } from './create-client.dto.js';

export class ListClientsDto extends PageQueryDto implements ListClientsQuery {
  /** Operator only: another owner's clients. */
  @Optional()
  @IsString()
  @Matches(OWNER_PATTERN)
  owner?: string;
}
