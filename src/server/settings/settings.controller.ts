import { Body, Controller, Get, Patch } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import { UpdateSettingsDto } from './dto/update-settings.dto.js';
import type { SettingsView } from '../../contracts/api/settings.js';
import { SettingsService } from './settings.service.js';

@Controller(orchestratorPaths('settings'))
export class SettingsController {
  constructor(private readonly settings: SettingsService) {}

  @Get()
  @RequireScopes('orchestrator:read')
  get(): SettingsView {
    return this.settings.get();
  }

  @Patch()
  @RequireScopes('admin')
  update(@Caller() caller: Caller, @Body() body: UpdateSettingsDto): Promise<SettingsView> {
    return this.settings.update(caller, body);
  }
}
