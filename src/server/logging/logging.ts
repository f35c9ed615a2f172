import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import pino, { type DestinationStream, type Level, type Logger, type LoggerOptions } from 'pino';
import { PinoPretty } from 'pino-pretty';
import pinoRoll from 'pino-roll';
import { pathOfUrl } from '../common/paths.js';
import { RequestContext } from '../common/request-context.js';
import type { LogFormat, LogLevel } from '../config/config.js';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../contracts/private-files.js';

/** Where rotated log files live, and how many hourly files are kept (a bit over 24 hours). */
export const logDirectory = (dataDir: string): string => join(dataDir, 'logs');
export const LOG_FILE_BASENAME = 'service.jsonl';
const KEPT_HOURLY_FILES = 25;

/**
 * Keys whose values never reach a log line, wherever they appear (two levels deep and inside
 * request/response serializations).
 */
const SECRET_KEYS = [
  'authorization',
  'cookie',
  'password',
  'secret',
  'client_secret',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'join_token',
  'private_key',
  'admin_password',
];
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["proxy-authorization"]',
  'res.headers["set-cookie"]',
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((key) => `*.${key}`),
  ...SECRET_KEYS.map((key) => `*.*.${key}`),
];

/**
 * The record shape of part 2: ISO `time`, upper-case `level`, `msg`, plus `component` from contexts.
 * A record written while a request is handled carries its `request_id`, read from the request
 * context when the record is written (a mixin), not bound into a child logger per request: binding
 * serializes and redacts the bindings for every request, logged or not (docs/benchmarks.md).
 */
export function loggerOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    messageKey: 'msg',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label.toUpperCase() }) },
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: { ...HTTP_SERIALIZERS, err: pino.stdSerializers.err },
    mixin: () => {
      const id = RequestContext.requestId();
      return id === undefined ? {} : { request_id: id };
    },
  };
}

/** How the console shows records: LOG_FORMAT, and colours only when it is a terminal. */
export interface ConsoleFormat {
  format: LogFormat;
  colorize: boolean;
}

/**
 * What writes the console's lines: `console` itself for JSON, or pino-pretty in-process (no worker
 * thread, so a record logged just before `process.exit` is still printed) turning each JSON line
 * into one readable line: `[12:00:00.000] INFO: [component] message {"other":"fields"}`. Errors
 * stay on their line too (their stack as an escaped JSON string), so one record is one line.
 */
export function consoleStream(console: Writable, { format, colorize }: ConsoleFormat): DestinationStream {
  if (format === 'json') return console;
  const pretty = PinoPretty({
    destination: console,
    singleLine: true,
    colorize,
    messageKey: 'msg',
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,component',
    messageFormat: '{if component}[{component}] {end}{msg}',
    errorLikeObjectKeys: [],
  });
  // Only `write`: pino announces its settings to a destination that can emit events, and
  // pino-pretty would then treat `err` as an error again, printed as an indented block.
  return { write: (line: string) => pretty.write(line) };
}

/**
 * Records to `console` (stdout in production: JSON lines, or readable ones by `format`) and, as
 * JSON lines always, to hourly-rotated files under DATA_DIR/logs, which the debug bundle reads.
 */
export async function logDestination(
  dataDir: string,
  console: Writable,
  format: ConsoleFormat = { format: 'json', colorize: false },
): Promise<DestinationStream> {
  makePrivateDir(logDirectory(dataDir));
  const file = await pinoRoll({
    file: join(logDirectory(dataDir), LOG_FILE_BASENAME),
    frequency: 'hourly',
    size: '100m',
    // Only if the directory is removed while the service runs (its mode is then the umask's).
    mkdir: true,
    // Every file the rotation opens, not only the first: records carry ids, names and addresses.
    mode: PRIVATE_FILE_MODE,
    limit: { count: KEPT_HOURLY_FILES },
  });
  return pino.multistream([
    { stream: consoleStream(console, format), level: 'trace' },
    { stream: file, level: 'trace' },
  ]);
}

type Req = IncomingMessage & { originalUrl?: string };

const pathOf = (req: Req): string => pathOfUrl(req.originalUrl ?? req.url);
const QUIET_PATHS = /^\/(health\/(live|ready|startup)|metrics)$/;

/** How request records show the request and the response: never headers, never the query. */
const HTTP_SERIALIZERS = {
  req: (req: Req) => ({ method: req.method, path: pathOf(req), remote_address: req.socket?.remoteAddress }),
  res: (res: ServerResponse) => ({ status_code: res.statusCode }),
};

/** The level of a request's record, from its outcome. */
function requestLogLevel(req: Req, res: ServerResponse): Level {
  if (res.statusCode >= 500) return 'error';
  // Anyone can send a bad token: at info a flood of them would bury the log. The requests
  // metric still counts every 401 by its status label.
  if (res.statusCode === 401) return 'debug';
  if (res.statusCode >= 400) return 'warn';
  // Probes and scrapes arrive every few seconds: keep them out of the info stream.
  return QUIET_PATHS.test(pathOf(req)) ? 'debug' : 'info';
}

/**
 * Writes one record per request when its response is done, or when the client went away first
 * (`aborted: true`, "aborted" in place of the status in the message): the request, the status, the
 * duration and the database work, `component: http`, at the level its outcome gives. Nothing is
 * built for a request whose record the current level drops.
 */
export function logRequest(
  logger: Logger,
  req: Req,
  res: ServerResponse,
  durationMs: number,
  aborted = false,
): void {
  const level = requestLogLevel(req, res);
  if (!logger.isLevelEnabled(level)) return;
  const record: Record<string, unknown> = {
    // Explicit: the response's events do not always run in the request's context.
    request_id: (req as Req & { id?: string }).id,
    req,
    component: 'http',
    res,
    duration_ms: Math.round(durationMs),
  };
  if (aborted) record.aborted = true;
  const db = RequestContext.databaseTimeOf(req);
  if (db) {
    record.db_queries = db.queries;
    record.db_ms = Math.round(db.ms);
  }
  logger[level](record, `${req.method} ${pathOf(req)} ${aborted ? 'aborted' : res.statusCode}`);
}
