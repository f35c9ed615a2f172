import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { SECURITY_HEADERS } from '../common/security-headers.js';
import { assignRequestId } from '../common/request-id.middleware.js';
import { pathOfUrl } from '../common/paths.js';
import type { HttpMetrics } from '../metrics/http-metrics.js';
import { logRequest } from '../logging/logging.js';

export const LIVENESS_PATH = '/health/live';
/** The same body terminus gives for a check with no indicators. */
const BODY = Buffer.from(JSON.stringify({ status: 'ok', info: {}, error: {}, details: {} }));

/**
 * Liveness means "the process runs and its event loop turns", so it is answered by the HTTP server
 * itself, ahead of the framework pipeline: a probe then costs what a bare node:http response costs
 * (docs/benchmarks.md), and nothing the pipeline depends on can make a live process look dead.
 * It still gets a request id, is counted in the request metrics and is logged at debug level.
 */
export function installLivenessResponder(server: Server, metrics: HttpMetrics, logger: () => Logger): void {
  const [framework] = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if ((req.method === 'GET' || req.method === 'HEAD') && pathOfUrl(req.url) === LIVENESS_PATH) {
      respond(req, res, metrics, logger());
    } else {
      framework(req, res);
    }
  });
}

function respond(req: IncomingMessage, res: ServerResponse, metrics: HttpMetrics, logger: Logger): void {
  const started = performance.now();
  assignRequestId(req, res);
  metrics.track(req, res, () => LIVENESS_PATH);
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': BODY.length,
  });
  res.end(req.method === 'HEAD' ? undefined : BODY);
  // Debug level (logRequest's for probes): checked first, the probe's cost is the point.
  if (logger.isLevelEnabled('debug')) logRequest(logger, req, res, performance.now() - started);
}
