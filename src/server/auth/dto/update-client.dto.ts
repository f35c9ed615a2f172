import { IsBoolean } from 'class-validator';
import type { UpdateClientRequest } from '../../../contracts/api/clients.js';

export class UpdateClientDto implements UpdateClientRequest {
  @IsBoolean()
  disabled: boolean;
}
