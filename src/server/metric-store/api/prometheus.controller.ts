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
import { ApiDoc, problemContent, type Answer } from '../../openapi/api-doc.js';
import { contractRef, type ContractName } from '../../openapi/contract-schemas.js';

/** Prometheus's envelopes: the data, or an error envelope; problems only from the guard and the body parser. */
function promAnswers(success: ContractName): Record<number, Answer> {
  const envelope = (description: string, problem: boolean): Answer => ({
    description,
    content: {
      'application/json': { schema: contractRef('PromErrorResponse') },
      ...(problem ? problemContent() : {}),
    },
  });
  return {
    200: success,
    400: envelope(
      'bad_data: a parameter or the query is malformed (a body that cannot be read is a problem).',
      true,
    ),
    422: envelope('execution: the query failed (too many samples or series, say).', false),
    500: envelope('internal: a defect.', true),
    503: envelope(
      'timeout or unavailable (the database); a problem when the guard cannot reach the database.',
      true,
    ),
  };
}

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
  @ApiDoc({
    summary: 'Instant query',
    tag: 'Metric store',
    query: 'PromInstantQueryRequest',
    responses: promAnswers('PromQueryResponse'),
  })
  queryGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.evaluate(req, res, (signal) => this.api(caller).query(form(req), signal));
  }

  @Post('query')
  @Consumes(...FORM_TYPES)
  @ApiDoc({
    summary: 'Instant query (form body)',
    tag: 'Metric store',
    body: 'PromInstantQueryRequest',
    responses: promAnswers('PromQueryResponse'),
  })
  queryPost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.evaluate(req, res, (signal) => this.api(caller).query(form(req), signal));
  }

  @Get('query_range')
  @ApiDoc({
    summary: 'Range query',
    tag: 'Metric store',
    query: 'PromRangeQueryRequest',
    responses: promAnswers('PromQueryResponse'),
  })
  rangeGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.evaluate(req, res, (signal) => this.api(caller).queryRange(form(req), signal));
  }

  @Post('query_range')
  @Consumes(...FORM_TYPES)
  @ApiDoc({
    summary: 'Range query (form body)',
    tag: 'Metric store',
    body: 'PromRangeQueryRequest',
    responses: promAnswers('PromQueryResponse'),
  })
  rangePost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.evaluate(req, res, (signal) => this.api(caller).queryRange(form(req), signal));
  }

  @Get('series')
  @ApiDoc({
    summary: 'Series matching selectors',
    tag: 'Metric store',
    query: 'PromSeriesRequest',
    responses: promAnswers('PromSeriesResponse'),
  })
  seriesGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).series(form(req)));
  }

  @Post('series')
  @Consumes(...FORM_TYPES)
  @ApiDoc({
    summary: 'Series matching selectors (form body)',
    tag: 'Metric store',
    body: 'PromSeriesRequest',
    responses: promAnswers('PromSeriesResponse'),
  })
  seriesPost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).series(form(req)));
  }

  @Get('labels')
  @ApiDoc({
    summary: 'Label names',
    tag: 'Metric store',
    query: 'PromSeriesRequest',
    responses: promAnswers('PromStringsResponse'),
  })
  labelsGet(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).labels(form(req)));
  }

  @Post('labels')
  @Consumes(...FORM_TYPES)
  @ApiDoc({
    summary: 'Label names (form body)',
    tag: 'Metric store',
    body: 'PromSeriesRequest',
    responses: promAnswers('PromStringsResponse'),
  })
  labelsPost(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).labels(form(req)));
  }

  @Get('label/:name/values')
  @ApiDoc({
    summary: "One label's values",
    tag: 'Metric store',
    query: 'PromSeriesRequest',
    responses: promAnswers('PromStringsResponse'),
  })
  labelValues(
    @Caller() caller: Caller,
    @Param('name') name: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    return this.answer(res, () => this.api(caller).labelValues(name, form(req)));
  }

  @Get('metadata')
  @ApiDoc({
    summary: 'Metric metadata',
    tag: 'Metric store',
    query: 'PromMetadataRequest',
    responses: promAnswers('PromMetadataResponse'),
  })
  metadata(@Caller() caller: Caller, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.answer(res, () => this.api(caller).metadata(form(req)));
  }

  @Get('status/buildinfo')
  @ApiDoc({
    summary: 'Build information (the Prometheus version answered as)',
    tag: 'Metric store',
    responses: promAnswers('PromBuildInfoResponse'),
  })
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
  @ApiDoc({
    summary: 'Exemplars (none are kept)',
    tag: 'Metric store',
    responses: promAnswers('PromExemplarsResponse'),
  })
  exemplars(@Res() res: Response): Promise<void> {
    return this.answer(res, () => Promise.resolve([]));
  }

  @Get('rules')
  @ApiDoc({
    summary: 'Rules (none are kept)',
    tag: 'Metric store',
    responses: promAnswers('PromRulesResponse'),
  })
  rules(@Res() res: Response): Promise<void> {
    return this.answer(res, () => Promise.resolve({ groups: [] }));
  }

  @Get('alerts')
  @ApiDoc({
    summary: 'Alerts (none are kept)',
    tag: 'Metric store',
    responses: promAnswers('PromAlertsResponse'),
  })
  alerts(@Res() res: Response): Promise<void> {
    return this.answer(res, () => Promise.resolve({ alerts: [] }));
  }

  private api(caller: Caller): PrometheusApi {
    return new PrometheusApi(this.store, caller.owner, queryLimits(this.config));
  }

  /**
   * A PromQL evaluation, aborted when the client goes away before its answer (the connection
   * closes with the response unfinished): the engine checks the signal where it yields and stops,
   * rather than running on to METRICS_QUERY_TIMEOUT for nobody. A query whose client left is
   * logged with its outcome (`canceled` when the engine stopped for it) and answered to no one.
   */
  private async evaluate(
    req: Request,
    res: Response,
    run: (signal: AbortSignal) => Promise<unknown>,
  ): Promise<void> {
    const started = Date.now();
    const abort = new AbortController();
    const gone = () => {
      if (!res.writableFinished) abort.abort();
    };
    res.on('close', gone);
    // The client may have left before this handler ran ('close' has been emitted then). Not
    // req.destroyed: a request is destroyed once its body has been read.
    if (res.destroyed || req.socket.destroyed) abort.abort();
    try {
      const outcome = await this.respond(res, () => run(abort.signal));
      if (abort.signal.aborted)
        this.logger.log(
          {
            query: String(one(form(req).query)).slice(0, 200),
            outcome,
            elapsed_ms: Date.now() - started,
          },
          'metric query: the client closed the connection',
        );
    } finally {
      res.off('close', gone);
    }
  }

  /** Prometheus's envelopes: `{status: "success", data}` or `{status: "error", errorType, error}`. */
  private async answer(res: Response, run: () => Promise<unknown>): Promise<void> {
    await this.respond(res, run);
  }

  /** Answers as `answer` does; resolves to `success` or the error type. Nothing is written once the connection is gone. */
  private async respond(res: Response, run: () => Promise<unknown>): Promise<string> {
    try {
      const data = await run();
      if (!res.destroyed) res.status(200).json({ status: 'success', data });
      return 'success';
    } catch (err) {
      const failure = this.failure(err);
      // A canceled query's client is gone: nobody to tell (and 499 is no answer the API documents).
      if (!res.destroyed)
        res
          .status(failure.status)
          .json({ status: 'error', errorType: failure.errorType, error: failure.message });
      return failure.errorType;
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

const one = (value: string | string[] | undefined): string => (Array.isArray(value) ? value[0] : value) ?? '';

/** Prometheus reads the form body first, then the URL (Go's Request.FormValue). */
function form(req: Request): Form {
  const body = typeof req.body === 'object' && req.body !== null ? (req.body as Form) : {};
  return { ...(req.query as Form), ...body };
}
