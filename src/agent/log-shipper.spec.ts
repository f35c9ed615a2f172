import { describe, expect, it } from 'vitest';
import { timestampNs } from './log-shipper.js';

describe('timestampNs', () => {
  it('reads the runtimes’ log timestamps to the nanosecond, whole seconds and offsets included', () => {
    expect(timestampNs('2026-11-24T03:02:56.123456789Z')).toBe(1_795_489_376_123_456_789n);
    expect(timestampNs('2026-11-24T03:02:56Z')).toBe(1_795_489_376_000_000_000n);
    expect(timestampNs('2026-11-24T03:02:56.5Z')).toBe(1_795_489_376_500_000_000n);
    expect(timestampNs('2026-11-24T04:02:56.000000001+01:00')).toBe(1_795_489_376_000_000_001n);
    expect(timestampNs('not a time')).toBeUndefined();
    expect(timestampNs('2026-11-24T03:02:56.1234567890Z')).toBeUndefined();
  });
});
