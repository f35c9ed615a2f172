import { Controller, Get, Res } from '@nestjs/common';
import { PrometheusController } from '@willsoto/nestjs-prometheus';
import type { Response } from 'express';
import { Public } from '../auth/auth.decorators.js';

/** `/metrics` for scrapers: no token (CONTRACT.md). */
@Controller()
export class MetricsController extends PrometheusController {
  @Get()
  @Public()
  override async index(@Res({ passthrough: true }) response: Response): Promise<string> {
    return super.index(response);
  }
}
