import { describe, expect, it } from 'vitest';
import { ValidationFailedError } from '../common/app-error.js';
import { logQuery } from './log-query.js';

const STACK = '6b0f3d52-3a51-4f0e-9d0c-3e1f0d1b2a40';
const NOW = Date.parse('2026-11-01T12:00:00Z');

const refused = (query: Parameters<typeof logQuery>[1]) => {
  try {
    logQuery(STACK, query, NOW);
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationFailedError);
    return (err as ValidationFailedError).errors ?? [];
  }
  throw new Error('expected a refusal');
};

describe('a logs query', () => {
  it('defaults to the newest 100 lines of every service, not followed', () => {
    expect(logQuery(STACK, {}, NOW)).toEqual({
      filter: { stackId: STACK, service: undefined, since: undefined, until: undefined },
      limit: 100,
      follow: false,
    });
  });

  it('reads RFC 3339 times with fractions and offsets, and durations back from now', () => {
    const q = logQuery(
      STACK,
      { service: 'web', since: '2026-11-01T10:30:00.250+01:00', until: '15m', limit: 5 },
      NOW,
    );
    expect(q.filter).toEqual({
      stackId: STACK,
      service: 'web',
      since: new Date('2026-11-01T09:30:00.250Z'),
      until: new Date(NOW - 15 * 60_000),
    });
    expect(q.limit).toBe(5);
    expect(logQuery(STACK, { since: '7d', follow: true }, NOW)).toMatchObject({
      filter: { since: new Date(NOW - 7 * 86_400_000) },
      follow: true,
    });
  });

  it('refuses times it cannot read, since after until, and until with follow, naming the parameter', () => {
    expect(refused({ since: 'yesterday', until: '2026-13-01T00:00:00Z' })).toEqual([
      { path: 'since', message: expect.stringContaining('RFC 3339') as string },
      { path: 'until', message: expect.stringContaining('RFC 3339') as string },
    ]);
    // A bare number could be seconds or a timestamp: units are required.
    expect(refused({ since: '300' }).map((e) => e.path)).toEqual(['since']);
    expect(refused({ since: '2026-11-01T11:00:00Z', until: '2h' })).toEqual([
      { path: 'since', message: 'since must not be after until' },
    ]);
    expect(refused({ until: '2026-11-01T11:00:00Z', follow: true })).toEqual([
      { path: 'until', message: 'a followed stream has no end: leave out until' },
    ]);
  });
});
