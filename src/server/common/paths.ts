/** A request URL's path: everything before the query. */
export function pathOfUrl(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** The two prefixes every orchestrator route is served under (CONTRACT.md: one route, two paths). */
export const API_PREFIXES = ['api/v1', 'v1'] as const;

/** Controller paths for a resource under both prefixes, e.g. `apiPaths('auth')`. */
export const apiPaths = (resource: string): string[] => API_PREFIXES.map((prefix) => `${prefix}/${resource}`);

/** Controller paths for an orchestrator resource, e.g. `orchestratorPaths('settings')`. */
export const orchestratorPaths = (resource = ''): string[] =>
  apiPaths(resource ? `orchestrator/${resource}` : 'orchestrator');
