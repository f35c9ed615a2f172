import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { PageQueryDto } from '../common/pagination.js';
import { orchestratorPaths } from '../common/paths.js';
import { CreateJoinTokenDto } from './dto/create-join-token.dto.js';
import type { CreatedJoinToken, JoinTokenList } from '../../contracts/api/join-tokens.js';
import { JoinTokensService } from './join-tokens.service.js';
import { ApiDoc } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('join-tokens'))
export class JoinTokensController {
  constructor(private readonly joinTokens: JoinTokensService) {}

  @Post()
  @RequireScopes('workers:admin')
  @ApiDoc({
    summary: 'Create a join token',
    description: 'The token is shown once.',
    tag: 'Workers',
    body: 'CreateJoinTokenRequest',
    responses: { 201: 'CreatedJoinToken' },
  })
  create(@Caller() caller: Caller, @Body() body: CreateJoinTokenDto): Promise<CreatedJoinToken> {
    return this.joinTokens.create(caller, body);
  }

  @Get()
  @RequireScopes('workers:admin')
  @ApiDoc({
    summary: 'List join tokens',
    tag: 'Workers',
    query: 'PageQuery',
    responses: { 200: 'JoinTokenList' },
  })
  async list(@Caller() caller: Caller, @Query() query: PageQueryDto): Promise<JoinTokenList> {
    const page = await this.joinTokens.list(caller, query);
    return { join_tokens: page.items, next_cursor: page.next_cursor };
  }

  @Delete(':id')
  @RequireScopes('workers:admin')
  @ApiDoc({ summary: 'Revoke a join token', tag: 'Workers', responses: { 204: null } })
  @HttpCode(204)
  revoke(@Caller() caller: Caller, @Param('id') id: string): Promise<void> {
    return this.joinTokens.revoke(caller, id);
  }
}
