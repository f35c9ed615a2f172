import type { Connection } from './args.js';
import { exchange, openDownload, problemError, type Download, type Method, type Payload } from './http.js';
import { TokenSource } from './tokens.js';

/**
 * The service's HTTP API as one client of it: Bearer requests with the tokens of a TokenSource.
 * Every failure becomes a CliError (an ApiError for an answer) with the service's words.
 */
export class ApiClient {
  readonly tokens: TokenSource;

  constructor(readonly connection: Connection) {
    this.tokens = new TokenSource(connection);
  }

  /**
   * Calls an API route (`path` relative to the server URL); the JSON answer, undefined for none.
   * `body` is sent as JSON, `raw` as it is with its own media type. A failure throws an ApiError.
   */
  async call(
    method: Method,
    path: string,
    options: { body?: unknown; raw?: Payload; query?: Record<string, string> } = {},
  ): Promise<unknown> {
    const url = new URL(path, this.connection.server);
    for (const [name, value] of Object.entries(options.query ?? {})) url.searchParams.set(name, value);
    const payload =
      options.raw ??
      (options.body === undefined
        ? undefined
        : { contentType: 'application/json', data: JSON.stringify(options.body) });
    const token = await this.tokens.token();
    let answer = await exchange(method, url, token, payload);
    // A token the service no longer takes (its key is gone, the clock disagrees): once more with a new one.
    if (answer.status === 401) answer = await exchange(method, url, await this.tokens.renew(token), payload);
    if (answer.status >= 200 && answer.status < 300) return answer.body;
    throw problemError(answer);
  }

  /**
   * GETs a file (`accept`: its media type, `headers` any more): the download under way, its body
   * not read yet. A failure throws an ApiError like `call`.
   */
  async download(path: string, accept: string, headers?: Record<string, string>): Promise<Download> {
    const url = new URL(path, this.connection.server);
    const token = await this.tokens.token();
    let opened = await openDownload(url, token, accept, headers);
    if ('answer' in opened && opened.answer.status === 401)
      opened = await openDownload(url, await this.tokens.renew(token), accept, headers);
    if ('answer' in opened) throw problemError(opened.answer);
    return opened.download;
  }
}
