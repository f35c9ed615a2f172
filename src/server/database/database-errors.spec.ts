import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './database-errors.js';

describe('isDatabaseUnavailable', () => {
  it('recognises connection failures, wrapped or not', () => {
    expect(
      isDatabaseUnavailable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ).toBe(true);
    expect(isDatabaseUnavailable({ message: 'query failed', driverError: { code: '57P01' } })).toBe(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
  });
  it('leaves other errors alone', () => {
    expect(isDatabaseUnavailable(new Error('duplicate key value'))).toBe(false);
    expect(isDatabaseUnavailable({ code: '23505' })).toBe(false);
    expect(isDatabaseUnavailable(undefined)).toBe(false);
  });
});
