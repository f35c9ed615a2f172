import { Controller, Get, Res } from '@nestjs/common';
import { PrometheusController } from '@willsoto/nestjs-prometheus';
import type { Response } from 'express';
import { Public } from '../auth/auth.decorators.js';
import { ApiDoc } from '../openapi/api-doc.js';

/** `/metrics` for scrapers: no token (CONTRACT.md). */
@Controller()
export class MetricsController extends PrometheusController {
  @Get()
  @Public()
  @ApiDoc({
    summary: "The service's own metrics for scrapers",
    description: 'Prometheus text format 0.0.4; docs/api.md lists the metrics.',
    tag: 'Metrics',
    responses: {
      200: { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } },
    },
  })
  override async index(@Res({ passthrough: true }) response: Response): Promise<string> {
    return super.index(response);
  }
}
