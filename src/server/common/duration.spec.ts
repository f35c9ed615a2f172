import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration.js';

describe('formatDuration', () => {
  it.each([
    [0, '0h0m0s'],
    [999, '0h0m0s'],
    [5_000, '0h0m5s'],
    [61_000, '0h1m1s'],
    [3_600_000, '1h0m0s'],
    [(72 * 3600 + 15 * 60 + 30) * 1000, '72h15m30s'],
    [(240 * 3600 + 59) * 1000 + 999, '240h0m59s'],
    [-5_000, '0h0m0s'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('parseDuration', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['7d', 604_800_000],
    ['72h15m30s', (72 * 3600 + 15 * 60 + 30) * 1000],
    ['30', 30_000],
    [' 2s ', 2000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'fast', '-1s', '1.5s', '10 s', 's', '10sec', '1w', '99999999999999999999d'])(
    'refuses %j',
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );
});
