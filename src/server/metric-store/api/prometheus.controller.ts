import { Controller, Get, Logger, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AcceptsBasicAuth, Caller, RequireScopes } from '../../auth/auth.decorators.js';
import { FORM_TYPES } from '../../common/body-parsers.js';
import { Consumes } from '../../common/media-type.js';
import { isDatabaseUnavailable } from '../../database/database-errors.js';
import { SERVICE_NAME, SERVICE_VERSION } from '../../common/version.js';
import { MetricStoreService } from '../store/metric-store.service.js';
import { AppConfig } from '../../config/config.js';
import { apiError, PromApiError, PrometheusApi, queryLimits, type Form } from './prometheus-api.js';

/** The Prometheus version whose HTTP API and PromQL this store answers as. */
export const COMPATIBLE_PROMETHEUS = '2.42.0';

/**
 * The Prometheus HTTP API's query side at /prometheus/api/v1 (CONTRACT.md, "Metric store"): GET
 * with query parameters or POST with a form body, Prometheus's envelopes and status codes, for
 * Grafana, promtool and scripts. A Bearer token or HTTP Basic with a client id and secret; a tenant
 * sees only its own series.
 */
@Controller('prometheus/api/v1')
@AcceptsBasicAuth()
@RequireScopes('metrics:read')
export class PrometheusController {
  private readonly logger = new Logger('metric-store');

  constructor(
    private readonly store: MetricStoreService,
    private readonly config: AppConfig,
  ) {}

  @Get('query')
  queryGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).query(form(req)));
  }

  @Post('query')
  @Consumes(...FORM_TYPES)
  queryPost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).query(form(req)));
  }

  @Get('query_range')
  rangeGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).queryRange(form(req)));
  }

  @Post('query_range')
  @Consumes(...FORM_TYPES)
  rangePost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).queryRange(form(req)));
  }

  @Get('series')
  seriesGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).series(form(req)));
  }

  @Post('series')
  @Consumes(...FORM_TYPES)
  seriesPost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).series(form(req)));
  }

  @Get('labels')
  labelsGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).labels(form(req)));
  }

  @Post('labels')
  @Consumes(...FORM_TYPES)
  labelsPost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).labels(form(req)));
  }

  @Get('label/:name/values')
  labelValues(
    @Caller() caller: Caller,
    @Param('name') name: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    return this.answer(res, () => this.api(caller).labelValues(name, form(req)));
  }

  @Get('metadata')
  metadata(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).metadata(form(req)));
  }

  @Get('status/buildinfo')
  buildinfo(@Res() res: Response): Promise<void> {
    return this.answer(res, () =>
      Promise.resolve({
        version: COMPATIBLE_PROMETHEUS,
        revision: '',
        branch: '',
        buildUser: '',
        buildDate: '',
        goVersion: '',
        application: `${SERVICE_NAME} ${SERVICE_VERSION}`,
      }),
    );
  }

  /** What Grafana asks for; this store keeps no exemplars, rules or alerts. */
  @Get('query_exemplars')
  exemplars(@Res() res: Response): Promise<void> {
    return this.answer(res, () => Promise.resolve([]));
  }

  @Get('rules')
  rules(@Res() res: Response): Promise<void> {
    return this.answer(res, () => Promise.resolve({ groups: [] }));
  }

  @Get('alerts')
  alerts(@Res() res: Response): Promise<void> {
    return this.answer(res, () => Promise.resolve({ alerts: [] }));
  }

  private api(caller: Caller): PrometheusApi {
    return new PrometheusApi(this.store, caller.owner, queryLimits(this.config));
  }

  /** Prometheus's envelopes: `{status: "success", data}` or `{status: "error", errorType, error}`. */
  private async answer(res: Response, run: () => Promise<unknown>): Promise<void> {
    try {
      const data = await run();
      res.status(200).json({ status: 'success', data });
    } catch (err) {
      const failure = this.failure(err);
      res
        .status(failure.status)
        .json({ status: 'error', errorType: failure.errorType, error: failure.message });
    }
  }

  /** A known failure as the API words it; the database away is 503, anything else a bare 500. */
  private failure(err: unknown): PromApiError {
    try {
      return apiError(err);
    } catch {
      if (isDatabaseUnavailable(err))
        return new PromApiError('unavailable', 'the database is unavailable', 503);
      this.logger.error({ err }, 'metric query failed');
      return new PromApiError('internal', 'internal error', 500);
    }
  }
}

/** Prometheus reads the form body first, then the URL (Go's Request.FormValue). */
function form(req: Request): Form {
  const body = typeof req.body === 'object' && req.body !== null ? (req.body as Form) : {};
  return { ...(req.query as Form), ...body };
}
