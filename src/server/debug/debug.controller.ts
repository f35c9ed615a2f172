import { Controller, Get, StreamableFile } from '@nestjs/common';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import { BUNDLE_CONTENT_TYPE, DebugService } from './debug.service.js';
import { ApiDoc } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('debug'))
export class DebugController {
  constructor(private readonly debug: DebugService) {}

  /** The tar.gz, streamed; a stream that fails half-way is cut off, never ended as if complete. */
  @Get('bundle')
  @RequireScopes('admin')
  @ApiDoc({
    summary: 'Download a debug bundle',
    description:
      'Operator owner only. A tar.gz streamed as an attachment; entries and redaction: docs/operations.md. Its `manifest.json` is a DebugBundleManifest.',
    tag: 'Orchestrator',
    responses: {
      200: {
        description: 'The bundle.',
        content: { 'application/gzip': { schema: { type: 'string', format: 'binary' } } },
      },
    },
    problems: { 429: 'This replica is making another bundle (`rate_limited`); see `Retry-After`.' },
  })
  async bundle(@Caller() caller: Caller): Promise<StreamableFile> {
    const bundle = await this.debug.bundle(caller);
    return new StreamableFile(bundle.stream, {
      type: BUNDLE_CONTENT_TYPE,
      disposition: `attachment; filename="${bundle.fileName}"`,
    });
  }
}
