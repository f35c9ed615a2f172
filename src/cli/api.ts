import { STATUS_CODES } from 'node:http';
import type { Connection } from './args.js';
import { CliError, EXIT_FAILURE } from './errors.js';

/** How long one HTTP exchange may take before stackctl gives up. */
const REQUEST_TIMEOUT_MS = 30_000;

type Method = 'GET' | 'POST' | 'DELETE';

interface Answer {
  status: number;
  body: unknown;
  requestId: string | undefined;
  /** Seconds, from the Retry-After header of a 429 or 503. */
  retryAfter: string | undefined;
}

/**
 * The service's HTTP API as one client of it: client credentials for an access token (fetched once
 * per run), then Bearer requests. Every failure becomes a CliError with the service's words.
 */
export class ApiClient {
  private accessToken: Promise<string> | undefined;

  constructor(private readonly connection: Connection) {}

  /** Calls an API route (`path` relative to the server URL); the JSON answer, undefined for none. */
  async call(method: Method, path: string, options: { body?: unknown; query?: Record<string, string> } = {}) {
    const token = await (this.accessToken ??= this.fetchToken());
    const url = this.url(path, options.query);
    const answer = await this.exchange(method, url, token, options.body);
    if (answer.status >= 200 && answer.status < 300) return answer.body;
    throw problemError(answer);
  }

  private async fetchToken(): Promise<string> {
    const answer = await this.exchange('POST', this.url('oauth/token'), undefined, {
      grant_type: 'client_credentials',
      client_id: this.connection.clientId,
      client_secret: this.connection.clientSecret,
    });
    if (answer.status !== 200) throw problemError(answer);
    const token = isObject(answer.body) ? answer.body.access_token : undefined;
    if (typeof token !== 'string' || token === '')
      throw new CliError('the token endpoint answered without an access token.');
    return token;
  }

  private url(path: string, query: Record<string, string> = {}): URL {
    const url = new URL(path, this.connection.server);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    return url;
  }

  private async exchange(
    method: Method,
    url: URL,
    token: string | undefined,
    body: unknown,
  ): Promise<Answer> {
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        // A redirect would carry the credentials elsewhere: report it instead of following it.
        redirect: 'manual',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new CliError(`cannot reach ${this.connection.server.origin}: ${describeFetchError(err)}.`);
    }
    const requestId = res.headers.get('x-request-id') ?? undefined;
    const retryAfter = res.headers.get('retry-after') ?? undefined;
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.get('location');
      throw new CliError(
        `the server answered HTTP ${res.status} redirecting to ${location ?? 'nowhere'}; give --server the final URL.`,
      );
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      throw new CliError(
        `the answer of ${this.connection.server.origin} broke off: ${describeFetchError(err)}.`,
      );
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
}

/** An error answer as a CliError: a problem, an RFC 6749 error, or just the status. */
function problemError(answer: Answer): CliError {
  const body = isObject(answer.body) ? answer.body : {};
  const requestId = stringField(body, 'request_id') ?? answer.requestId;
  const request = requestId ? `, request ${requestId}` : '';
  const retry = answer.retryAfter !== undefined ? [`Retry after ${answer.retryAfter} s.`] : [];
  const detail = stringField(body, 'detail') ?? stringField(body, 'title');
  const code = stringField(body, 'code');
  if (detail !== undefined) {
    return new CliError(`${detail} (${code ?? `HTTP ${answer.status}`}${request})`, EXIT_FAILURE, [
      ...fieldErrors(body),
      ...retry,
    ]);
  }
  const oauthError = stringField(body, 'error');
  if (oauthError !== undefined) {
    const description = stringField(body, 'error_description') ?? 'The token request was refused.';
    return new CliError(`${description} (${oauthError}${request})`, EXIT_FAILURE, retry);
  }
  const reason = STATUS_CODES[answer.status] ?? 'Error';
  const id = requestId ? ` (request ${requestId})` : '';
  return new CliError(`the server answered HTTP ${answer.status} ${reason}${id}.`, EXIT_FAILURE, retry);
}

/** A problem's `errors[]` as indented `path: message` lines. */
function fieldErrors(body: Record<string, unknown>): string[] {
  const errors = body.errors;
  if (!Array.isArray(errors)) return [];
  return errors.filter(isObject).map((e) => {
    const path = stringField(e, 'path');
    const message = stringField(e, 'message') ?? 'invalid';
    return path ? `  ${path}: ${message}` : `  ${message}`;
  });
}

/** fetch's "fetch failed" hides the reason in `cause` (an AggregateError for dual-stack hosts). */
function describeFetchError(err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
    return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  let reason: unknown = err instanceof Error && err.cause !== undefined ? err.cause : err;
  if (reason instanceof AggregateError && reason.message === '' && reason.errors.length > 0)
    reason = reason.errors[0];
  if (reason instanceof Error) {
    const code = (reason as Error & { code?: unknown }).code;
    return reason.message.trim() || (typeof code === 'string' ? code : reason.name);
  }
  return String(reason);
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function stringField(body: Record<string, unknown>, name: string): string | undefined {
  const value = body[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}
