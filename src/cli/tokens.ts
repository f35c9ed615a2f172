import type { TokenRequest } from '../contracts/api/index.js';
import type { Connection } from './args.js';
import { CliError } from './errors.js';
import { ApiError, exchange, isObject, problemError } from './http.js';

/** Tokens are renewed this long before they expire, so a long wait does not end in a 401. */
const TOKEN_RENEW_MARGIN_MS = 60_000;

interface Held {
  token: string;
  /** The refresh token of the same answer, if the service gave one. */
  refreshToken: string | undefined;
  renewAt: number;
}

/**
 * Access tokens of one client: by client credentials at first, then by the refresh token of the last
 * answer shortly before the held token expires (by client credentials again if that is refused).
 * One fetch at a time, whatever the number of callers: a refresh token redeemed twice makes the
 * service revoke its whole family.
 */
export class TokenSource {
  private held: Promise<Held> | undefined;

  /** `notice` hears why a refresh fell back to client credentials (never a secret). */
  constructor(
    private readonly connection: Connection,
    private readonly notice: (line: string) => void = () => undefined,
  ) {}

  /** A token that is not near its end: the one held, else a new one. */
  async token(): Promise<string> {
    const seen = this.held;
    const held = await settled(seen);
    if (held !== undefined && held.renewAt > Date.now()) return held.token;
    return (await this.next(seen)).token;
  }

  /** The token to use after the service refused `rejected` (401): a new one, unless a call already got one. */
  async renew(rejected: string): Promise<string> {
    const seen = this.held;
    const held = await settled(seen);
    if (held !== undefined && held.token !== rejected) return held.token;
    return (await this.next(seen)).token;
  }

  /** The successor of `seen`: a caller that finds it already asked for waits for that answer. */
  private next(seen: Promise<Held> | undefined): Promise<Held> {
    if (this.held !== undefined && this.held !== seen) return this.held;
    const pending = this.fetchAfter(seen);
    this.held = pending;
    // A failed fetch is not kept: a later call asks again (the callers waiting on it get the error).
    pending.catch(() => {
      if (this.held === pending) this.held = undefined;
    });
    return pending;
  }

  private async fetchAfter(seen: Promise<Held> | undefined): Promise<Held> {
    const refreshToken = (await settled(seen))?.refreshToken;
    if (refreshToken === undefined) return this.request({ grant_type: 'client_credentials' });
    try {
      return await this.request({ grant_type: 'refresh_token', refresh_token: refreshToken });
    } catch (err) {
      // Refused (expired, revoked, a service that lost it): the client credentials still work.
      // Not reaching the service at all is reported as it is.
      if (!(err instanceof ApiError)) throw err;
      this.notice(`the refresh token was refused (${err.message}); using the client credentials.`);
      return this.request({ grant_type: 'client_credentials' });
    }
  }

  /** One token request; the client authenticates on both grants (the service checks they match). */
  private async request(grant: Pick<TokenRequest, 'grant_type' | 'refresh_token'>): Promise<Held> {
    const requested = Date.now();
    const answer = await exchange('POST', new URL('oauth/token', this.connection.server), undefined, {
      contentType: 'application/json',
      data: JSON.stringify({
        ...grant,
        client_id: this.connection.clientId,
        client_secret: this.connection.clientSecret,
      } satisfies TokenRequest),
    });
    if (answer.status !== 200) throw problemError(answer);
    const body = isObject(answer.body) ? answer.body : {};
    const token = body.access_token;
    if (typeof token !== 'string' || token === '')
      throw new CliError('the token endpoint answered without an access token.');
    const refresh = body.refresh_token;
    const expiresIn = body.expires_in;
    const lifetimeMs =
      typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0
        ? expiresIn * 1000
        : Number.POSITIVE_INFINITY;
    // Short-lived tokens are renewed at half their life instead of a fixed margin before the end.
    const margin = Math.min(TOKEN_RENEW_MARGIN_MS, lifetimeMs / 2);
    return {
      token,
      refreshToken: typeof refresh === 'string' && refresh !== '' ? refresh : undefined,
      renewAt: requested + lifetimeMs - margin,
    };
  }
}

/** What a fetch gave, undefined if there was none or it failed (its callers saw the error). */
const settled = (held: Promise<Held> | undefined): Promise<Held | undefined> =>
  held === undefined ? Promise.resolve(undefined) : held.catch(() => undefined);
