import { describe, expect, it } from 'vitest';
import { hasScope, isScope, parseScopeParam } from './scopes.js';

describe('scopes', () => {
  it('admin implies every scope; others imply only themselves', () => {
    expect(hasScope(['admin'], 'workers:admin')).toBe(true);
    expect(hasScope(['orchestrator:read'], 'orchestrator:read')).toBe(true);
    expect(hasScope(['orchestrator:read'], 'orchestrator:write')).toBe(false);
    expect(hasScope(['orchestrator:write'], 'orchestrator:read')).toBe(false);
    expect(hasScope([], 'metrics:read')).toBe(false);
  });

  it('parses the space-delimited scope parameter', () => {
    expect(parseScopeParam(' a  b a ')).toEqual(['a', 'b']);
    expect(parseScopeParam('')).toEqual([]);
  });

  it('knows the scopes of CONTRACT.md and nothing else', () => {
    for (const s of [
      'orchestrator:read',
      'orchestrator:write',
      'workers:admin',
      'tunnel:read',
      'tunnel:write',
      'metrics:read',
      'metrics:write',
      'admin',
    ]) {
      expect(isScope(s)).toBe(true);
    }
    expect(isScope('root')).toBe(false);
  });
});
