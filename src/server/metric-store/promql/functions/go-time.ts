/**
 * Go 1.19's time arithmetic for the date functions, exactly (BigInt, with Go's int64 and uint64
 * wrap-around): Prometheus converts a sample value with int64(v), which on amd64 turns NaN and
 * out-of-range values into math.MinInt64, and Go's calendar code then answers for any int64
 * second, year 292277026596 included. JS Date covers far less.
 */
const U64 = 1n << 64n;
const I64_MIN = -(1n << 63n);
const SECONDS_PER_DAY = 86_400n;
const ABSOLUTE_ZERO_YEAR = -292_277_022_399n;
/**
 * unixToInternal + internalToAbsolute: seconds from 1 January of absoluteZeroYear to the Unix epoch
 * (730,692,556 cycles of 400 years to year 1, then 719,162 days to 1970).
 */
const UNIX_TO_ABSOLUTE = (730_692_556n * 146_097n + 719_162n) * 86_400n;
const DAYS_PER_400_YEARS = 146_097n;
const DAYS_PER_100_YEARS = 36_524n;
const DAYS_PER_4_YEARS = 1_461n;
const DAYS_BEFORE = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365];

const u64 = (x: bigint): bigint => ((x % U64) + U64) % U64;
const i64 = (x: bigint): bigint => {
  const u = u64(x);
  return u >= 1n << 63n ? u - U64 : u;
};

/** Go's int64(v) on amd64: truncation, and MinInt64 for NaN and whatever does not fit. */
export function goInt64(v: number): bigint {
  if (!Number.isFinite(v) || v >= 2 ** 63 || v < -(2 ** 63)) return I64_MIN;
  return BigInt(Math.trunc(v));
}

export interface GoDate {
  year: number;
  month: number;
  day: number;
  yday: number;
  hour: number;
  minute: number;
  weekday: number;
  daysInMonth: number;
}

function isLeap(year: bigint): boolean {
  return year % 4n === 0n && (year % 100n !== 0n || year % 400n === 0n);
}

/** absDate: the calendar date of an absolute time (seconds since year absoluteZeroYear). */
function absDate(abs: bigint): { year: bigint; month: number; day: number; yday: number } {
  let d = abs / SECONDS_PER_DAY;
  let n = d / DAYS_PER_400_YEARS;
  let y = 400n * n;
  d -= DAYS_PER_400_YEARS * n;
  n = d / DAYS_PER_100_YEARS;
  n -= n >> 2n;
  y += 100n * n;
  d -= DAYS_PER_100_YEARS * n;
  n = d / DAYS_PER_4_YEARS;
  y += 4n * n;
  d -= DAYS_PER_4_YEARS * n;
  n = d / 365n;
  n -= n >> 2n;
  y += n;
  d -= 365n * n;
  const year = i64(i64(y) + ABSOLUTE_ZERO_YEAR);
  const yday = Number(d);
  let day = yday;
  if (isLeap(year)) {
    if (day > 31 + 29 - 1) day--;
    else if (day === 31 + 29 - 1) return { year, month: 2, day: 29, yday };
  }
  let month = Math.floor(day / 31);
  const end = DAYS_BEFORE[month + 1];
  let begin: number;
  if (day >= end) {
    month++;
    begin = end;
  } else begin = DAYS_BEFORE[month];
  return { year, month: month + 1, day: day - begin + 1, yday };
}

/** time.Date(year, month, 32, 0, 0, 0, 0, UTC).Day(), the way days_in_month asks for it. */
function dayOf32nd(year: bigint, month: number): number {
  let y = u64(year - ABSOLUTE_ZERO_YEAR);
  let n = y / 400n;
  y -= 400n * n;
  let d = DAYS_PER_400_YEARS * n;
  n = y / 100n;
  y -= 100n * n;
  d += DAYS_PER_100_YEARS * n;
  n = y / 4n;
  y -= 4n * n;
  d += DAYS_PER_4_YEARS * n;
  d += 365n * y;
  d += BigInt(DAYS_BEFORE[month - 1]);
  if (isLeap(year) && month >= 3) d++;
  d += 31n;
  return absDate(u64(u64(d) * SECONDS_PER_DAY)).day;
}

/** The UTC calendar fields of time.Unix(sec, 0). */
export function goDate(sec: bigint): GoDate {
  const abs = u64(i64(sec + UNIX_TO_ABSOLUTE));
  const date = absDate(abs);
  return {
    year: Number(date.year),
    month: date.month,
    day: date.day,
    yday: date.yday + 1,
    hour: Number((abs % SECONDS_PER_DAY) / 3600n),
    minute: Number((abs % 3600n) / 60n),
    // absWeekday: the absolute epoch is a Monday.
    weekday: Number(((abs + SECONDS_PER_DAY) % 604_800n) / SECONDS_PER_DAY),
    daysInMonth: 32 - dayOf32nd(date.year, date.month),
  };
}
