import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsIn,
  IsString,
  Length,
  Matches,
} from 'class-validator';
import { Optional } from '../../common/optional.js';
import { SCOPES, type Scope } from '../scopes.js';
import type { CreateClientRequest } from '../../../contracts/api/clients.js';

export const OWNER_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export class CreateClientDto implements CreateClientRequest {
  @IsString()
  @Length(1, 100)
  name: string;

  @Optional()
  @IsString()
  @Matches(OWNER_PATTERN, { message: 'owner must be 1-63 lower-case letters, digits, "_" or "-"' })
  owner?: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(SCOPES.length)
  @ArrayUnique()
  @IsIn(SCOPES, { each: true, message: `each scope must be one of ${SCOPES.join(', ')}` })
  scopes: Scope[];
}
