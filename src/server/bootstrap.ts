import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger as NestLogger } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { RequestHandler } from 'express';
import type { Writable } from 'node:stream';
import { AppModule } from './app.module.js';
import { bodyParser } from './common/body-parsers.js';
import { requestFront } from './common/request-front.js';
import { consoleMiddleware, defaultConsoleDir } from './console/console-static.js';
import { StartupState } from './common/startup-state.js';
import type { AppConfig } from './config/config.js';
import { installLivenessResponder } from './health/liveness.js';
import { ServiceLogger } from './logging/service-logger.js';
import { HttpMetrics } from './metrics/http-metrics.js';
import { TunnelIngress } from './tunnel/ingress/tunnel-ingress.js';
import { OpenApiDocumentService } from './openapi/openapi-document.service.js';
import { repairDataDir } from '../contracts/private-files.js';
import { answerClientErrors } from './common/client-errors.js';
import type { Server } from 'node:http';

/** What the service keeps in DATA_DIR: the entries the repair at start walks. */
const DATA_DIR_ENTRIES = ['pgdata', 'pgdata.lock', 'logs', 'secrets'] as const;

export interface AppOptions {
  /** Where log lines go besides the rotated files (LOG_FORMAT's); stdout unless a test captures them. */
  logConsole?: Writable;
  /**
   * Express middleware in front of everything else: the test harness observes every answer with
   * it (test/support/openapi-check.ts holds them to the OpenAPI document). Production passes none.
   */
  middleware?: RequestHandler[];
}

/** Builds the whole application exactly as production runs it; tests use this too. */
export async function createApp(
  config: AppConfig,
  options: AppOptions = {},
): Promise<NestExpressApplication> {
  // Before any module opens a file there: earlier versions left the embedded database (its WAL
  // holds stack definitions verbatim), the logs and the master key readable by every local user.
  const repaired = repairDataDir(config.dataDir, DATA_DIR_ENTRIES);
  const app = await NestFactory.create<NestExpressApplication>(
    AppModule.forRoot(config, options.logConsole ?? process.stdout),
    { bodyParser: false, bufferLogs: true, abortOnError: false },
  );
  app.useLogger(app.get(ServiceLogger));
  if (repaired > 0)
    new NestLogger('data-dir').warn(
      { data_dir: config.dataDir, entries: repaired },
      'made files and directories in the data directory private to the service user',
    );
  app.disable('x-powered-by');
  for (const handler of options.middleware ?? []) app.use(handler);
  const metrics = app.get(HttpMetrics);
  // Before any Nest middleware: every request gets an id, is counted and logged, whatever happens next.
  app.use(requestFront(metrics, () => PinoLogger.root));
  // The web console's static files (docs/console.md): before Nest's routes, after the headers.
  app.use(consoleMiddleware(defaultConsoleDir()));
  // Bodies are read after the front, so a refused body is counted and logged like any request.
  app.use(bodyParser(config.httpBodyBudget));
  const server: Server = app.getHttpServer();
  // Node's own 5 minutes would let a client hold a connection and a partial body that long.
  server.requestTimeout = config.httpRequestTimeoutMs;
  server.headersTimeout = Math.min(server.headersTimeout, config.httpRequestTimeoutMs);
  // Node looks for connections past those timeouts every 30 s: a quarter of the timeout instead.
  // (A server option Node reads when it starts listening; @types/node leaves it out.)
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    30_000,
    Math.max(1_000, config.httpRequestTimeoutMs / 4),
  );
  answerClientErrors(server);
  installLivenessResponder(app.getHttpServer(), metrics, () => PinoLogger.root);
  // Outermost: a published service's subdomain is proxied even for paths the API also has.
  app.get(TunnelIngress).install(app.getHttpServer());
  app.get(OpenApiDocumentService).attach(app);
  return app;
}

/** Creates the app and starts its listeners; /health/startup turns 200 once they are all up. */
export async function startApp(config: AppConfig, options: AppOptions = {}): Promise<NestExpressApplication> {
  const app = await createApp(config, options);
  await app.listen(config.port, config.host);
  app.get(StartupState).markListening('http');
  return app;
}
