import { Body, Controller, Get, Patch } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import { UpdateSettingsDto } from './dto/update-settings.dto.js';
import type { SettingsView } from '../../contracts/api/settings.js';
import { SettingsService } from './settings.service.js';
import { ApiDoc } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('settings'))
export class SettingsController {
  constructor(private readonly settings: SettingsService) {}

  @Get()
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: 'Read the settings', tag: 'Settings', responses: { 200: 'SettingsView' } })
  get(): SettingsView {
    return this.settings.get();
  }

  @Patch()
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'Change the log level',
    description:
      'Applies at once, is stored and reaches the other replicas within SETTINGS_REFRESH_INTERVAL.',
    tag: 'Settings',
    body: 'UpdateSettingsRequest',
    responses: { 200: 'SettingsView' },
  })
  update(@Caller() caller: Caller, @Body() body: UpdateSettingsDto): Promise<SettingsView> {
    return this.settings.update(caller, body);
  }
}
