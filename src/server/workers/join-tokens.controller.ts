import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { PageQueryDto } from '../common/pagination.js';
import { orchestratorPaths } from '../common/paths.js';
import { CreateJoinTokenDto } from './dto/create-join-token.dto.js';
import type { CreatedJoinToken, JoinTokenList } from '../../contracts/api/join-tokens.js';
import { JoinTokensService } from './join-tokens.service.js';

@Controller(orchestratorPaths('join-tokens'))
export class JoinTokensController {
  constructor(private readonly joinTokens: JoinTokensService) {}

  @Post()
  @RequireScopes('workers:admin')
  create(@Caller() caller: Caller, @Body() body: CreateJoinTokenDto): Promise<CreatedJoinToken> {
    return this.joinTokens.create(caller, body);
  }

  @Get()
  @RequireScopes('workers:admin')
  async list(@Caller() caller: Caller, @Query() query: PageQueryDto): Promise<JoinTokenList> {
    const page = await this.joinTokens.list(caller, query);
    return { join_tokens: page.items, next_cursor: page.next_cursor };
  }

  @Delete(':id')
  @RequireScopes('workers:admin')
  @HttpCode(204)
  revoke(@Caller() caller: Caller, @Param('id') id: string): Promise<void> {
    return this.joinTokens.revoke(caller, id);
  }
}
