const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses duration text such as `500ms`, `10s`, `1h30m` or `7d` into milliseconds.
 * A bare number is seconds. Returns undefined for anything else.
 */
export function parseDuration(text: string): number | undefined {
  const value = text.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  if (value === '' || !/^(\d+(ms|s|m|h|d))+$/.test(value)) return undefined;
  let total = 0;
  for (const [, amount, unit] of value.matchAll(/(\d+)(ms|s|m|h|d)/g)) {
    total += Number(amount) * UNIT_MS[unit];
  }
  return Number.isSafeInteger(total) ? total : undefined;
}

/**
 * Formats milliseconds as the document's duration text: whole hours, minutes and seconds,
 * always all three (`72h15m30s`, `0h0m5s`). Hours are not folded into days.
 */
export function formatDuration(ms: number): string {
  const totalSeconds = Math.max(0, Math.floor(ms / 1000));
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  return `${hours}h${minutes}m${seconds}s`;
}
