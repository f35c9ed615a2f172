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
import { ApiDoc } from '../openapi/api-doc.js';

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
  @ApiDoc({
    summary: "The presented access token's claims",
    tag: 'Auth',
    responses: { 200: 'TokenValidation' },
  })
  validate(@Caller() caller: Caller): TokenValidation {
    return this.auth.validate(caller);
  }

  @Post('clients')
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'Create a client',
    description:
      "The secret is shown once. An owner's admins create clients of their owner; the operator's, of any.",
    tag: 'Auth',
    body: 'CreateClientRequest',
    responses: { 201: 'CreatedClient' },
  })
  create(@Caller() caller: Caller, @Body() body: CreateClientDto): Promise<CreatedClient> {
    return this.clients.create(caller, body);
  }

  @Get('clients')
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'List clients',
    tag: 'Auth',
    query: 'ListClientsQuery',
    responses: { 200: 'ClientList' },
  })
  async list(@Caller() caller: Caller, @Query() query: ListClientsDto): Promise<ClientList> {
    const page = await this.clients.list(caller, query);
    return { clients: page.items, next_cursor: page.next_cursor };
  }

  @Patch('clients/:clientId')
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'Disable or enable a client',
    tag: 'Auth',
    body: 'UpdateClientRequest',
    responses: { 200: 'ClientView' },
    problems: { 409: 'A client cannot disable itself (`conflict`).' },
  })
  update(
    @Caller() caller: Caller,
    @Param('clientId') clientId: string,
    @Body() body: UpdateClientDto,
  ): Promise<ClientView> {
    return this.clients.setDisabled(caller, clientId, body.disabled);
  }

  @Delete('clients/:clientId')
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'Delete a client',
    tag: 'Auth',
    responses: { 204: null },
    problems: { 409: 'A client cannot delete itself (`conflict`).' },
  })
  @HttpCode(204)
  delete(@Caller() caller: Caller, @Param('clientId') clientId: string): Promise<void> {
    return this.clients.delete(caller, clientId);
  }

  @Get('keys')
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'List the signing keys',
    description: 'Operator owner only.',
    tag: 'Auth',
    responses: { 200: 'KeyList' },
  })
  listKeys(@Caller() caller: Caller): KeyList {
    assertOperator(caller);
    return { keys: this.keys.list() };
  }

  @Post('keys/rotate')
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'Rotate the signing key',
    description: 'Operator owner only.',
    tag: 'Auth',
    responses: { 201: 'KeyRotation' },
  })
  async rotate(@Caller() caller: Caller): Promise<KeyRotation> {
    assertOperator(caller);
    const result = await this.keys.rotate();
    return result;
  }
}
