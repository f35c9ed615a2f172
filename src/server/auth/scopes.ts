/** Every scope a client can hold (CONTRACT.md). `admin` implies all of them. */
export const SCOPES = [
  'orchestrator:read',
  'orchestrator:write',
  'workers:admin',
  'tunnel:read',
  'tunnel:write',
  'metrics:read',
  'metrics:write',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);

/** True when `granted` satisfies `needed`. */
export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes('admin') || granted.includes(needed);
}

/** The owner whose admins operate the whole instance: they provision other owners' clients. */
export const OPERATOR_OWNER = 'default';

/** Splits an OAuth `scope` parameter (space-delimited, RFC 6749 3.3). */
export function parseScopeParam(value: string): string[] {
  return [...new Set(value.split(' ').filter((s) => s.length > 0))];
}
