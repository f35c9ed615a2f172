// stackctl's HTTP exchange with the service and how its error answers become CliErrors.
import { STATUS_CODES } from 'node:http';
import { CliError, EXIT_FAILURE } from './errors.js';

/** How long one HTTP exchange may take before stackctl gives up. */
const REQUEST_TIMEOUT_MS = 30_000;

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** A request body as bytes on the wire with its media type. */
export interface Payload {
  contentType: string;
  data: string | Uint8Array;
}

export interface Answer {
  status: number;
  body: unknown;
  requestId: string | undefined;
  /** Seconds, from the Retry-After header of a 429 or 503. */
  retryAfter: string | undefined;
}

/** A failed API call: the CliError to report, with the service's status and (problem) body. */
export class ApiError extends CliError {
  constructor(
    message: string,
    details: string[],
    readonly status: number,
    readonly body: unknown,
  ) {
    super(message, EXIT_FAILURE, details);
    this.name = 'ApiError';
  }

  /** The problem's `code`, if the answer was a problem. */
  get code(): string | undefined {
    return isObject(this.body) ? stringField(this.body, 'code') : undefined;
  }
}

/**
 * One HTTP exchange with the service, its JSON answer parsed. Network failures, redirects and bodies
 * that are not JSON become a CliError; any status is returned as it is.
 */
export async function exchange(
  method: Method,
  url: URL,
  token: string | undefined,
  payload: Payload | undefined,
): Promise<Answer> {
  const res = await send(method, url, token, payload, {
    accept: 'application/json, application/problem+json',
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    timeoutMs: REQUEST_TIMEOUT_MS,
  });
  return answerOf(url, res);
}

/** The request on the wire; network failures and redirects become a CliError. */
async function send(
  method: Method,
  url: URL,
  token: string | undefined,
  payload: Payload | undefined,
  options: { accept: string; signal: AbortSignal; timeoutMs: number; headers?: Record<string, string> },
): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers, accept: options.accept };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (payload !== undefined) headers['content-type'] = payload.contentType;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: payload?.data,
      // A redirect would carry the credentials elsewhere: report it instead of following it.
      redirect: 'manual',
      signal: options.signal,
    });
  } catch (err) {
    throw new CliError(`cannot reach ${url.origin}: ${describeFetchError(err, options.timeoutMs)}.`);
  }
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers.get('location');
    throw new CliError(
      `the server answered HTTP ${res.status} redirecting to ${location ?? 'nowhere'}; give --server the final URL.`,
    );
  }
  return res;
}

/** A response read whole and its JSON parsed; a body that is not JSON is a CliError unless an error. */
async function answerOf(url: URL, res: Response): Promise<Answer> {
  const requestId = res.headers.get('x-request-id') ?? undefined;
  const retryAfter = res.headers.get('retry-after') ?? undefined;
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    throw new CliError(`the answer of ${url.origin} broke off: ${describeFetchError(err)}.`);
  }
  const answer: Answer = { status: res.status, body: undefined, requestId, retryAfter };
  if (text === '') return answer;
  try {
    return { ...answer, body: JSON.parse(text) as unknown };
  } catch {
    if (res.status >= 400) return answer;
    throw new CliError(`the server answered HTTP ${res.status} with a body that is not JSON.`);
  }
}

/** How long a download may wait for its answer to start, and then between two chunks of it. */
const DOWNLOAD_START_TIMEOUT_MS = 120_000;
const DOWNLOAD_IDLE_TIMEOUT_MS = 60_000;

/** A download under way: its headers, and its body as chunks, each wait bounded. */
export interface Download {
  headers: Headers;
  chunks: AsyncIterable<Uint8Array>;
  /** Stops it: for a caller that will not read the body after all. */
  cancel(): void;
}

/**
 * GET a file: a 2xx answer is handed over unread (the body streams through `chunks`); any other is
 * read like `exchange` reads it. The service may take a while before the first byte (it gathers a
 * debug bundle first), so the start and each pause in the body get their own limits, not the whole.
 */
export async function openDownload(
  url: URL,
  token: string,
  accept: string,
  headers?: Record<string, string>,
): Promise<{ download: Download } | { answer: Answer }> {
  const abort = new AbortController();
  let timer = setTimeout(() => abort.abort(), DOWNLOAD_START_TIMEOUT_MS);
  let res: Response;
  try {
    res = await send('GET', url, token, undefined, {
      accept: `${accept}, application/problem+json`,
      headers,
      signal: abort.signal,
      timeoutMs: DOWNLOAD_START_TIMEOUT_MS,
    });
  } finally {
    clearTimeout(timer);
  }
  if (res.status < 200 || res.status >= 300 || res.body === null) return { answer: await answerOf(url, res) };
  const body = res.body;
  async function* chunks(): AsyncGenerator<Uint8Array> {
    const reader = body.getReader();
    try {
      for (;;) {
        timer = setTimeout(() => abort.abort(), DOWNLOAD_IDLE_TIMEOUT_MS);
        let next: Awaited<ReturnType<typeof reader.read>>;
        try {
          next = await reader.read();
        } catch (err) {
          const reason = abort.signal.aborted
            ? `nothing arrived for ${DOWNLOAD_IDLE_TIMEOUT_MS / 1000} s`
            : describeFetchError(err);
          throw new CliError(`the download from ${url.origin} broke off: ${reason}.`);
        } finally {
          clearTimeout(timer);
        }
        if (next.done) return;
        yield next.value;
      }
    } finally {
      reader.releaseLock();
      if (!abort.signal.aborted) abort.abort();
    }
  }
  return { download: { headers: res.headers, chunks: chunks(), cancel: () => abort.abort() } };
}

/**
 * The file name of a `Content-Disposition: attachment; filename="..."` header when it is a plain
 * name (letters, digits, `.`, `_`, `-`; no path, not hidden), else undefined.
 */
export function attachmentName(header: string | null): string | undefined {
  const name = /;\s*filename="([^"]*)"/i.exec(header ?? '')?.[1];
  return name !== undefined && /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/.test(name) ? name : undefined;
}

/** An error answer as an ApiError: a problem, an RFC 6749 error, or just the status. */
export function problemError(answer: Answer): ApiError {
  const body = isObject(answer.body) ? answer.body : {};
  const requestId = stringField(body, 'request_id') ?? answer.requestId;
  const request = requestId ? `, request ${requestId}` : '';
  const retry = answer.retryAfter !== undefined ? [`Retry after ${answer.retryAfter} s.`] : [];
  const detail = stringField(body, 'detail') ?? stringField(body, 'title');
  const code = stringField(body, 'code');
  if (detail !== undefined) {
    return new ApiError(
      `${detail} (${code ?? `HTTP ${answer.status}`}${request})`,
      [...fieldErrors(body), ...retry],
      answer.status,
      answer.body,
    );
  }
  const oauthError = stringField(body, 'error');
  if (oauthError !== undefined) {
    const description = stringField(body, 'error_description') ?? 'The token request was refused.';
    return new ApiError(`${description} (${oauthError}${request})`, retry, answer.status, answer.body);
  }
  const reason = STATUS_CODES[answer.status] ?? 'Error';
  const id = requestId ? ` (request ${requestId})` : '';
  return new ApiError(
    `the server answered HTTP ${answer.status} ${reason}${id}.`,
    retry,
    answer.status,
    answer.body,
  );
}

/** A problem's `errors[]` as indented lines (see {@link fieldErrorLine}). */
function fieldErrors(body: Record<string, unknown>): string[] {
  const errors = body.errors;
  if (!Array.isArray(errors)) return [];
  return errors.filter(isObject).map((e) => `  ${fieldErrorLine(e)}`);
}

/**
 * One entry of a problem's `errors[]`: `path: message`, or for a position in a file (a stack
 * definition) `line:column path [category] message`, the parts it has.
 */
export function fieldErrorLine(error: Record<string, unknown>): string {
  const path = stringField(error, 'path');
  const message = stringField(error, 'message') ?? 'invalid';
  const { line, column } = error;
  if (isPosition(line) && isPosition(column)) {
    const category = stringField(error, 'category');
    return [`${line}:${column}`, path, category === undefined ? undefined : `[${category}]`, message]
      .filter((part) => part !== undefined)
      .join(' ');
  }
  return path ? `${path}: ${message}` : message;
}

const isPosition = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value > 0;

/** fetch's "fetch failed" hides the reason in `cause` (an AggregateError for dual-stack hosts). */
export function describeFetchError(err: unknown, timeoutMs = REQUEST_TIMEOUT_MS): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
    return `no answer within ${timeoutMs / 1000} s`;
  let reason: unknown = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (reason instanceof AggregateError && reason.message === '' && reason.errors.length > 0)
    reason = reason.errors[0];
  if (reason instanceof Error) {
    const code = (reason as Error & { code?: unknown }).code;
    return reason.message.trim() || (typeof code === 'string' ? code : reason.name);
  }
  return String(reason);
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

export function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}
