import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { AcceptsBasicAuth, Caller, RequireScopes } from '../../auth/auth.decorators.js';
import { AppError } from '../../common/app-error.js';
import { Consumes } from '../../common/media-type.js';
import { MetricInputError } from '../errors.js';
import { labelsKey } from '../labels.js';
import { decodeRemoteWrite } from '../remote-write.js';
import type { SeriesSamples } from '../series.js';
import { MetricStoreService } from '../store/metric-store.service.js';
import { parseTextExposition } from '../text-import.js';
import { ApiDoc } from '../../openapi/api-doc.js';

/**
 * Ingestion into the metric store: Prometheus remote write 1.0 and the text exposition format
 * (CONTRACT.md, "Metric store"). A 204 means the samples are committed. Scope metrics:write; a
 * Bearer token (Prometheus's oauth2 block) or HTTP Basic with a client id and secret (basic_auth).
 */
@Controller('prometheus/api/v1')
@AcceptsBasicAuth()
@RequireScopes('metrics:write')
export class IngestController {
  constructor(private readonly store: MetricStoreService) {}

  /** Snappy-compressed WriteRequest protobuf, as `remote_write` sends it. */
  @Post('write')
  @HttpCode(204)
  @Consumes('application/x-protobuf')
  @ApiDoc({
    summary: 'Prometheus remote write 1.0',
    description:
      'A snappy-compressed WriteRequest protobuf, as `remote_write` sends it. 204: the samples are committed.',
    tag: 'Metric store',
    body: { type: 'string', format: 'binary' },
    responses: { 204: null },
    problems: {
      400: 'The body is not a valid WriteRequest (`bad_request`).',
      413: 'The body or a decoded limit is too large (`payload_too_large`).',
    },
  })
  async write(@Caller() caller: Caller, @Body() body: unknown): Promise<void> {
    const decoded = ingest(() => decodeRemoteWrite(bytesOf(body)));
    await this.store.writeMetadata(caller.owner, decoded.metadata);
    await this.store.write(caller.owner, incoming(decoded.series));
  }

  /** The text exposition format; samples without a timestamp are stamped now. */
  @Post('import/prometheus')
  @HttpCode(204)
  @Consumes('text/plain', 'application/openmetrics-text')
  @ApiDoc({
    summary: 'Import the text exposition format',
    description: 'Samples without a timestamp are stamped now. 204: the samples are committed.',
    tag: 'Metric store',
    body: { type: 'string' },
    responses: { 204: null },
    problems: {
      400: 'The text is not valid exposition format (`bad_request`).',
      413: 'The body or a decoded limit is too large (`payload_too_large`).',
    },
  })
  async import(@Caller() caller: Caller, @Body() body: unknown): Promise<void> {
    const text = Buffer.from(bytesOf(body)).toString('utf8');
    const parsed = ingest(() => parseTextExposition(text, Date.now()));
    await this.store.writeMetadata(caller.owner, parsed.metadata);
    await this.store.write(caller.owner, incoming(parsed.series));
  }
}

const incoming = (series: SeriesSamples[]) => series.map((s) => ({ ...s, key: labelsKey(s.labels) }));

/** Bad input as a problem saying what is wrong: 400 malformed, 413 over a limit. */
function ingest<T>(decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    if (!(err instanceof MetricInputError)) throw err;
    const title = err.status === 413 ? 'Payload Too Large' : 'Bad Request';
    throw new AppError(
      err.status,
      err.status === 413 ? 'payload_too_large' : 'bad_request',
      title,
      err.message,
    );
  }
}

/** The body as bytes (body-parsers.ts keeps RAW_TYPES as a Buffer); empty without one. */
const bytesOf = (body: unknown): Uint8Array => (Buffer.isBuffer(body) ? body : new Uint8Array(0));
