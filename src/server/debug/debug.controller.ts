import { Controller, Get, StreamableFile } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import { BUNDLE_CONTENT_TYPE, DebugService } from './debug.service.js';

@Controller(orchestratorPaths('debug'))
export class DebugController {
  constructor(private readonly debug: DebugService) {}

  /** The tar.gz, streamed; a stream that fails half-way is cut off, never ended as if complete. */
  @Get('bundle')
  @RequireScopes('admin')
  async bundle(@Caller() caller: Caller): Promise<StreamableFile> {
    const bundle = await this.debug.bundle(caller);
    return new StreamableFile(bundle.stream, {
      type: BUNDLE_CONTENT_TYPE,
      disposition: `attachment; filename="${bundle.fileName}"`,
    });
  }
}
