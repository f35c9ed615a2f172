const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** An RFC 3339 time (`2026-11-01T10:00:00Z`, fractions and offsets allowed) in milliseconds. */
export function parseRfc3339(text: string): number | undefined {
  const rfc = RFC3339.exec(text);
  if (rfc === null || !validCalendar(rfc)) return undefined;
  const ms = Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isNaN(ms) ? undefined : ms;
}

function validCalendar(m: RegExpExecArray): boolean {
  const [month, day, hour, minute, second] = [m[2], m[3], m[4], m[5], m[6]].map(Number);
  const days = new Date(Date.UTC(Number(m[1]), month, 0)).getUTCDate();
  return month >= 1 && month <= 12 && day >= 1 && day <= days && hour < 24 && minute < 60 && second < 60;
}
