import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { apiPaths } from '../common/paths.js';
import type { ClientList, ClientView, CreatedClient } from '../../contracts/api/clients.js';
import type { KeyList, KeyRotation } from '../../contracts/api/keys.js';
import type { TokenValidation } from '../../contracts/api/oauth.js';
import { Caller, RequireScopes } from './auth.decorators.js';
import { AuthService } from './auth.service.js';
import { ClientsService } from './clients.service.js';
import { CreateClientDto } from './dto/create-client.dto.js';
import { ListClientsDto } from './dto/list-clients.dto.js';
import { UpdateClientDto } from './dto/update-client.dto.js';
import { assertOperator } from './operator.js';
import { SigningKeysService } from './signing-keys.service.js';

@Controller(apiPaths('auth'))
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    private readonly clients: ClientsService,
    private readonly keys: SigningKeysService,
  ) {}

  /** Any valid access token: its claims. */
  @Get('validate')
  @RequireScopes()
  validate(@Caller() caller: Caller): TokenValidation {
    return this.auth.validate(caller);
  }

  @Post('clients')
  @RequireScopes('admin')
  create(@Caller() caller: Caller, @Body() body: CreateClientDto): Promise<CreatedClient> {
    return this.clients.create(caller, body);
  }

  @Get('clients')
  @RequireScopes('admin')
  async list(@Caller() caller: Caller, @Query() query: ListClientsDto): Promise<ClientList> {
    const page = await this.clients.list(caller, query);
    return { clients: page.items, next_cursor: page.next_cursor };
  }

  @Patch('clients/:clientId')
  @RequireScopes('admin')
  update(
    @Caller() caller: Caller,
    @Param('clientId') clientId: string,
    @Body() body: UpdateClientDto,
  ): Promise<ClientView> {
    return this.clients.setDisabled(caller, clientId, body.disabled);
  }

  @Delete('clients/:clientId')
  @RequireScopes('admin')
  @HttpCode(204)
  delete(@Caller() caller: Caller, @Param('clientId') clientId: string): Promise<void> {
    return this.clients.delete(caller, clientId);
  }

  @Get('keys')
  @RequireScopes('admin')
  listKeys(@Caller() caller: Caller): KeyList {
    assertOperator(caller);
    return { keys: this.keys.list() };
  }

  @Post('keys/rotate')
  @RequireScopes('admin')
  async rotate(@Caller() caller: Caller): Promise<KeyRotation> {
    assertOperator(caller);
    const result = await this.keys.rotate();
    return result;
  }
}
