import { Controller, Get, Param, Query, Req, Res, StreamableFile } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { StackLogPage } from '../../contracts/api/stack-logs.js';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import { StackLogsDto } from './dto/stack-logs.dto.js';
import { StackLogsService } from './stack-logs.service.js';
import { ApiDoc } from '../openapi/api-doc.js';
import { contractRef } from '../openapi/contract-schemas.js';

@Controller(orchestratorPaths('stacks'))
export class StackLogsController {
  constructor(private readonly stackLogs: StackLogsService) {}

  /**
   * The stack's service output; `follow=true` streams it (NDJSON, or server-sent events for a
   * client that accepts `text/event-stream`).
   */
  @Get(':id/logs')
  @RequireScopes('orchestrator:read')
  @ApiDoc({
    summary: "The stack's service output",
    description:
      'With `follow=true` the response stays open: one StackLogLine per line as NDJSON, or as server-sent events (`id:` the line\'s position, `event: line`, `data:` the line) for a client that accepts `text/event-stream`. The service ends the stream when the stack is deleted, when the service stops, and when the token expires or is revoked; a server-sent event stream then ends with `event: end` and `data: {"reason": ...}` (`token_expired`, `client_revoked`, `grant_revoked`, `stack_deleted`, `service_stopping`, `failed`). A `Last-Event-ID` header (the `id` of the last line received) goes on after that line instead of sending the newest lines again.',
    tag: 'Stacks',
    query: 'StackLogsQuery',
    responses: {
      200: {
        content: {
          'application/json': { schema: contractRef('StackLogPage') },
          'application/x-ndjson': { schema: contractRef('StackLogLine') },
          'text/event-stream': { schema: { type: 'string' } },
        },
      },
    },
    problems: {
      429: 'This replica already follows as many logs as it may (`rate_limited`); see `Retry-After`.',
    },
  })
  async logs(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Query() query: StackLogsDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StackLogPage | StreamableFile> {
    if (query.follow !== true) return this.stackLogs.read(caller, id, query);
    const sse = req.accepts(['application/x-ndjson', 'text/event-stream']) === 'text/event-stream';
    const after = req.headers['last-event-id'];
    const stream = await this.stackLogs.follow(
      caller,
      id,
      query,
      sse ? 'sse' : 'ndjson',
      typeof after === 'string' ? after.trim() : undefined,
    );
    res.setHeader('Cache-Control', 'no-store');
    // Proxies such as nginx would otherwise hold the lines back until a buffer fills.
    res.setHeader('X-Accel-Buffering', 'no');
    // The status and headers go at once, not with the first line: an NDJSON stream of a quiet stack
    // may write nothing for a long time, and the client should know it is following by then.
    res.once('pipe', () => res.flushHeaders());
    return new StreamableFile(stream, {
      type: sse ? 'text/event-stream; charset=utf-8' : 'application/x-ndjson; charset=utf-8',
    });
  }
}
