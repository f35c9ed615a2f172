// The console's typed client over the public HTTP API (src/contracts/api): the same routes, the same
// tokens and scopes as stackctl or any other client. The session keeps its tokens in memory only.
import type {
  AuditList,
  ConnectivityCheck,
  ConnectivityView,
  CreatedJoinToken,
  DriftResolve,
  DriftView,
  InstallCommand,
  JobCleanup,
  JobList,
  JobLogPage,
  JobView,
  ListJobsQuery,
  OAuthError,
  OrchestratorHealth,
  Problem,
  RegistryUrl,
  SettingsView,
  StackHealthView,
  StackList,
  StackRevision,
  StackRevisionList,
  StackView,
  TokenResponse,
  TokenValidation,
  Topology,
  TunnelStatus,
  TunnelSubdomainList,
  TunnelSubdomainServices,
  UpdateSettingsRequest,
  ValidationSummary,
  WorkerList,
  WorkerStatus,
  WorkerView,
} from '../../src/contracts/api/index.js';

/** A failed call: the problem the service answered, or one made up for a network failure. */
export class ApiError extends Error {
  constructor(readonly problem: Pick<Problem, 'title' | 'detail' | 'status'> & Partial<Problem>) {
    super(`${problem.title}: ${problem.detail}`);
  }
}

type Query = Record<string, string | number | boolean | undefined>;

interface RequestOptions {
  query?: Query;
  json?: unknown;
  yaml?: string;
  /** Answers that are not JSON (none today) would be read as text. */
  text?: boolean;
}

function withQuery(path: string, query: Query | undefined): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && value !== '') params.set(key, String(value));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

async function problemOf(res: Response): Promise<ApiError> {
  const type = res.headers.get('content-type') ?? '';
  if (type.includes('json')) {
    const body = (await res.json().catch(() => null)) as
      | (Partial<Problem> &
          Partial<OAuthError> & {
            error?: unknown;
          })
      | null;
    if (body && typeof body.title === 'string')
      return new ApiError({ ...body, title: body.title, detail: body.detail ?? '', status: res.status });
    // Prometheus API errors: {status: "error", errorType, error}.
    if (body && typeof body.error === 'string')
      return new ApiError({
        title: typeof body.error_description === 'string' ? 'Sign-in failed' : 'Query failed',
        detail: body.error_description ?? body.error,
        status: res.status,
      });
  }
  return new ApiError({ title: res.statusText || `HTTP ${res.status}`, detail: '', status: res.status });
}

const REFRESH_MARGIN_MS = 60_000;

export interface Identity {
  clientId: string;
  owner: string;
  scopes: string[];
}

type Listener = () => void;

/**
 * One signed-in client: the access and refresh tokens live in this object only (never in storage),
 * and the access token is refreshed a minute before it expires (or at 80 % of a shorter lifetime).
 */
export class Session {
  private access = '';
  private refreshToken = '';
  private timer: ReturnType<typeof setTimeout> | undefined;
  private refreshing: Promise<void> | undefined;
  identity: Identity | undefined;
  /** Why the session ended by itself (a refused refresh), for the sign-in page. */
  endedBecause: string | undefined;
  private readonly listeners = new Set<Listener>();

  get signedIn(): boolean {
    return this.access !== '';
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(): void {
    for (const listener of this.listeners) listener();
  }

  async signIn(clientId: string, secret: string): Promise<void> {
    const tokens = await this.tokenRequest({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: secret,
    });
    this.accept(tokens);
    const claims = await this.call<TokenValidation>('GET', '/api/v1/auth/validate');
    this.identity = { clientId: claims.client_id, owner: claims.owner, scopes: claims.scope.split(' ') };
    this.endedBecause = undefined;
    this.emit();
  }

  /** Revokes this session's refresh token (its family, this sign-in only) and forgets both tokens. */
  async signOut(): Promise<void> {
    const token = this.refreshToken;
    // Forget both tokens first, so nothing started from now on can use them.
    this.clear();
    if (token)
      await fetch('/oauth/revoke', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token, token_type_hint: 'refresh_token' }),
      }).catch(() => undefined);
    this.emit();
  }

  hasScope(scope: string): boolean {
    const scopes = this.identity?.scopes ?? [];
    return scopes.includes('admin') || scopes.includes(scope);
  }

  private clear(): void {
    clearTimeout(this.timer);
    this.access = '';
    this.refreshToken = '';
    this.identity = undefined;
  }

  private async tokenRequest(body: Record<string, string>): Promise<TokenResponse> {
    let res: Response;
    try {
      res = await fetch('/oauth/token', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
    } catch {
      throw new ApiError({ title: 'Service unreachable', detail: 'The service did not answer.', status: 0 });
    }
    if (!res.ok) throw await problemOf(res);
    return (await res.json()) as TokenResponse;
  }

  private accept(tokens: TokenResponse): void {
    this.access = tokens.access_token;
    this.refreshToken = tokens.refresh_token;
    const lifetime = tokens.expires_in * 1000;
    const delay = Math.max(1000, Math.min(lifetime - REFRESH_MARGIN_MS, lifetime * 0.8));
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.refresh().catch(() => undefined), delay);
  }

  /** Trades the refresh token for a new pair; one exchange at a time (a refresh token is single use). */
  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        this.accept(
          await this.tokenRequest({ grant_type: 'refresh_token', refresh_token: this.refreshToken }),
        );
      } catch (err) {
        this.clear();
        this.endedBecause =
          err instanceof ApiError ? `${err.problem.title}: ${err.problem.detail}` : 'The session ended.';
        this.emit();
        throw err;
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  /** One API call with the access token; a 401 gets one refresh and one retry. */
  async call<T>(method: string, path: string, options: RequestOptions = {}, retried = false): Promise<T> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.access}` };
    let body: string | undefined;
    if (options.yaml !== undefined) {
      headers['Content-Type'] = 'application/yaml';
      body = options.yaml;
    } else if (options.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    let res: Response;
    try {
      res = await fetch(withQuery(path, options.query), { method, headers, body });
    } catch {
      throw new ApiError({ title: 'Service unreachable', detail: 'The service did not answer.', status: 0 });
    }
    if (res.status === 401 && !retried && this.refreshToken) {
      await this.refresh();
      return this.call<T>(method, path, options, true);
    }
    if (!res.ok) throw await problemOf(res);
    if (res.status === 204) return undefined as T;
    return (options.text ? await res.text() : await res.json()) as T;
  }
}

export const session = new Session();

const O = '/api/v1/orchestrator';

/** Prometheus HTTP API answers (the built-in store). */
export interface PromMatrix {
  resultType: 'matrix';
  result: { metric: Record<string, string>; values: [number, string][] }[];
}
interface PromAnswer<T> {
  status: 'success';
  data: T;
  warnings?: string[];
}

/** Every route the console uses, typed by the contracts. */
export const api = {
  health: () => session.call<OrchestratorHealth>('GET', `${O}/health`),
  workers: (query: { status?: WorkerStatus | ''; limit?: number; cursor?: string } = {}) =>
    session.call<WorkerList>('GET', `${O}/workers`, { query }),
  worker: (id: string) => session.call<WorkerView>('GET', `${O}/workers/${encodeURIComponent(id)}`),
  approveWorker: (id: string) =>
    session.call<WorkerView>('POST', `${O}/workers/${encodeURIComponent(id)}/approve`),
  deleteWorker: (id: string) => session.call<void>('DELETE', `${O}/workers/${encodeURIComponent(id)}`),
  connectivity: () => session.call<ConnectivityView>('GET', `${O}/workers/connectivity`),
  checkConnectivity: () => session.call<ConnectivityCheck>('POST', `${O}/workers/connectivity/check`),
  createJoinToken: () => session.call<CreatedJoinToken>('POST', `${O}/join-tokens`, { json: {} }),

  stacks: (query: { limit?: number; cursor?: string } = {}) =>
    session.call<StackList>('GET', `${O}/stacks`, { query }),
  stack: (id: string) => session.call<StackView>('GET', `${O}/stacks/${encodeURIComponent(id)}`),
  createStack: (yaml: string) => session.call<StackView>('POST', `${O}/stacks`, { yaml }),
  updateStack: (id: string, yaml: string) =>
    session.call<StackView>('PUT', `${O}/stacks/${encodeURIComponent(id)}`, { yaml }),
  destroyStack: (id: string) => session.call<JobView>('DELETE', `${O}/stacks/${encodeURIComponent(id)}`),
  deployStack: (id: string) => session.call<JobView>('POST', `${O}/stacks/${encodeURIComponent(id)}/deploy`),
  stackHealth: (id: string) =>
    session.call<StackHealthView>('GET', `${O}/stacks/${encodeURIComponent(id)}/health`),
  revisions: (id: string) =>
    session.call<StackRevisionList>('GET', `${O}/stacks/${encodeURIComponent(id)}/revisions`),
  revision: (id: string, revision: number) =>
    session.call<StackRevision>('GET', `${O}/stacks/${encodeURIComponent(id)}/revisions/${revision}`),
  validate: (yaml: string) => session.call<ValidationSummary>('POST', `${O}/unifier/validate`, { yaml }),

  drift: (id: string) => session.call<DriftView>('GET', `${O}/stacks/${encodeURIComponent(id)}/drift`),
  resolveDrift: (id: string) =>
    session.call<DriftResolve>('POST', `${O}/stacks/${encodeURIComponent(id)}/drift/resolve`),
  ignoreDrift: (id: string, resources: string[], ignore: boolean) =>
    session.call<DriftView>(
      'POST',
      `${O}/stacks/${encodeURIComponent(id)}/drift/${ignore ? 'ignore' : 'unignore'}`,
      { json: { resources } },
    ),

  jobs: (query: ListJobsQuery = {}) => session.call<JobList>('GET', `${O}/jobs`, { query: { ...query } }),
  job: (id: string) => session.call<JobView>('GET', `${O}/jobs/${encodeURIComponent(id)}`),
  jobLogs: (id: string, after: number) =>
    session.call<JobLogPage>('GET', `${O}/jobs/${encodeURIComponent(id)}/logs`, {
      query: { after, limit: 1000 },
    }),
  cancelJob: (id: string) => session.call<JobView>('POST', `${O}/jobs/${encodeURIComponent(id)}/cancel`),
  cleanupJob: (id: string) => session.call<JobCleanup>('POST', `${O}/jobs/${encodeURIComponent(id)}/cleanup`),

  settings: () => session.call<SettingsView>('GET', `${O}/settings`),
  updateSettings: (body: UpdateSettingsRequest) =>
    session.call<SettingsView>('PATCH', `${O}/settings`, { json: body }),
  audit: (query: { action?: string; limit?: number; cursor?: string } = {}) =>
    session.call<AuditList>('GET', `${O}/audit`, { query }),

  tunnelStatus: () => session.call<TunnelStatus>('GET', '/api/v1/tunnel/status'),
  tunnelStart: () => session.call<TunnelStatus>('POST', '/api/v1/tunnel/start'),
  tunnelStop: () => session.call<TunnelStatus>('POST', '/api/v1/tunnel/stop'),
  registryUrl: () => session.call<RegistryUrl>('GET', '/api/v1/tunnel/registry-url'),
  topology: () => session.call<Topology>('GET', '/api/v1/tunnel/topology'),
  subdomains: () => session.call<TunnelSubdomainList>('GET', '/api/v1/tunnel/subdomains'),
  subdomainServices: (baseId: string) =>
    session.call<TunnelSubdomainServices>(
      'GET',
      `/api/v1/tunnel/subdomains/${encodeURIComponent(baseId)}/services`,
    ),
  installCommand: (token: string) =>
    session.call<InstallCommand>('POST', '/api/v1/tunnel/install-command', { json: { token } }),

  queryRange: async (query: string, start: number, end: number, step: number) =>
    (
      await session.call<PromAnswer<PromMatrix>>('GET', '/prometheus/api/v1/query_range', {
        query: { query, start, end, step },
      })
    ).data,
};
