/**
 * Functions over a range vector, one series' window at a time (promql/functions.go, 2.42): the
 * window is samples [lo, hi) of t/v, stale markers already removed. `undefined` means no output.
 */
import { PromqlExecutionError } from '../errors.js';
import { quantile } from './quantile.js';

export interface WindowEnv {
  /** The evaluation time (what Prometheus calls enh.Ts). */
  ts: number;
  /** The window's bounds: [rangeStart, rangeEnd], after offset and @. */
  rangeStart: number;
  rangeEnd: number;
  range: number;
  /** The call's scalar arguments at this step, in order. */
  args: number[];
}

export type Window = ArrayLike<number>;
export type WindowFunction = (
  t: Window,
  v: Window,
  lo: number,
  hi: number,
  env: WindowEnv,
) => number | undefined;

/** Neumaier's compensated summation step (kahanSumInc). */
function kahanInc(inc: number, sum: number, c: number): [number, number] {
  const t = sum + inc;
  if (Math.abs(sum) >= Math.abs(inc)) c += sum - t + inc;
  else c += inc - t + sum;
  return [t, c];
}

function isInf(x: number): boolean {
  return x === Infinity || x === -Infinity;
}

function extrapolatedRate(isCounter: boolean, isRate: boolean): WindowFunction {
  return (t, v, lo, hi, env) => {
    const n = hi - lo;
    if (n < 2) return undefined;
    const first = v[lo];
    let result = v[hi - 1] - first;
    if (isCounter) {
      let prev = first;
      for (let i = lo + 1; i < hi; i++) {
        if (v[i] < prev) result += prev;
        prev = v[i];
      }
    }
    let durationToStart = (t[lo] - env.rangeStart) / 1000;
    const durationToEnd = (env.rangeEnd - t[hi - 1]) / 1000;
    const sampledInterval = (t[hi - 1] - t[lo]) / 1000;
    const averageDurationBetweenSamples = sampledInterval / (n - 1);
    if (isCounter && result > 0 && first >= 0) {
      // A counter does not go below zero: do not extrapolate past where it would be zero.
      const durationToZero = sampledInterval * (first / result);
      if (durationToZero < durationToStart) durationToStart = durationToZero;
    }
    const threshold = averageDurationBetweenSamples * 1.1;
    let extrapolateToInterval = sampledInterval;
    extrapolateToInterval +=
      durationToStart < threshold ? durationToStart : averageDurationBetweenSamples / 2;
    extrapolateToInterval += durationToEnd < threshold ? durationToEnd : averageDurationBetweenSamples / 2;
    let factor = extrapolateToInterval / sampledInterval;
    if (isRate) factor /= env.range / 1000;
    return result * factor;
  };
}

function instantValue(isRate: boolean): WindowFunction {
  return (t, v, lo, hi) => {
    if (hi - lo < 2) return undefined;
    const last = v[hi - 1];
    const previous = v[hi - 2];
    let result = isRate && last < previous ? last : last - previous;
    const interval = t[hi - 1] - t[hi - 2];
    if (interval === 0) return undefined;
    if (isRate) result /= interval / 1000;
    return result;
  };
}

/** Least squares over the window, x in seconds relative to interceptTime. */
function linearRegression(
  t: Window,
  v: Window,
  lo: number,
  hi: number,
  interceptTime: number,
): [number, number] {
  let n = 0;
  let [sumX, cX, sumY, cY, sumXY, cXY, sumX2, cX2] = [0, 0, 0, 0, 0, 0, 0, 0];
  const initY = v[lo];
  let constY = true;
  for (let i = lo; i < hi; i++) {
    if (constY && i > lo && v[i] !== initY) constY = false;
    n++;
    const x = (t[i] - interceptTime) / 1000;
    [sumX, cX] = kahanInc(x, sumX, cX);
    [sumY, cY] = kahanInc(v[i], sumY, cY);
    [sumXY, cXY] = kahanInc(x * v[i], sumXY, cXY);
    [sumX2, cX2] = kahanInc(x * x, sumX2, cX2);
  }
  if (constY) return isInf(initY) ? [NaN, NaN] : [0, initY];
  sumX += cX;
  sumY += cY;
  sumXY += cXY;
  sumX2 += cX2;
  const covXY = sumXY - (sumX * sumY) / n;
  const varX = sumX2 - (sumX * sumX) / n;
  const slope = covXY / varX;
  return [slope, sumY / n - (slope * sumX) / n];
}

const holtWinters: WindowFunction = (_t, v, lo, hi, env) => {
  const [sf, tf] = env.args;
  if (!(sf > 0 && sf < 1))
    throw new PromqlExecutionError(`invalid smoothing factor. Expected: 0 < sf < 1, got: ${sf}`);
  if (!(tf > 0 && tf < 1))
    throw new PromqlExecutionError(`invalid trend factor. Expected: 0 < tf < 1, got: ${tf}`);
  if (hi - lo < 2) return undefined;
  let s0 = 0;
  let s1 = v[lo];
  let b = v[lo + 1] - v[lo];
  for (let i = 1; i < hi - lo; i++) {
    const x = sf * v[lo + i];
    // The trend at this point (calcTrendValue); the first step keeps the initial trend.
    if (i > 1) b = tf * (s1 - s0) + (1 - tf) * b;
    const y = (1 - sf) * (s1 + b);
    s0 = s1;
    s1 = x + y;
  }
  return s1;
};

function sumOverTime(v: Window, lo: number, hi: number): number {
  let sum = 0;
  let c = 0;
  for (let i = lo; i < hi; i++) [sum, c] = kahanInc(v[i], sum, c);
  return isInf(sum) ? sum : sum + c;
}

function avgOverTime(v: Window, lo: number, hi: number): number {
  let mean = 0;
  let c = 0;
  let count = 0;
  for (let i = lo; i < hi; i++) {
    count++;
    const x = v[i];
    if (isInf(mean)) {
      if (isInf(x) && mean > 0 === x > 0) continue;
      if (Number.isFinite(x)) continue;
    }
    [mean, c] = kahanInc(x / count - mean / count, mean, c);
  }
  return isInf(mean) ? mean : mean + c;
}

function variance(v: Window, lo: number, hi: number): number {
  let count = 0;
  let [mean, cMean, aux, cAux] = [0, 0, 0, 0];
  for (let i = lo; i < hi; i++) {
    count++;
    const delta = v[i] - (mean + cMean);
    [mean, cMean] = kahanInc(delta / count, mean, cMean);
    [aux, cAux] = kahanInc(delta * (v[i] - (mean + cMean)), aux, cAux);
  }
  return (aux + cAux) / count;
}

export const RANGE_FUNCTIONS: ReadonlyMap<string, WindowFunction> = new Map<string, WindowFunction>([
  ['rate', extrapolatedRate(true, true)],
  ['increase', extrapolatedRate(true, false)],
  ['delta', extrapolatedRate(false, false)],
  ['irate', instantValue(true)],
  ['idelta', instantValue(false)],
  ['deriv', (t, v, lo, hi) => (hi - lo < 2 ? undefined : linearRegression(t, v, lo, hi, t[lo])[0])],
  [
    'predict_linear',
    (t, v, lo, hi, env) => {
      if (hi - lo < 2) return undefined;
      const [slope, intercept] = linearRegression(t, v, lo, hi, env.ts);
      return slope * env.args[0] + intercept;
    },
  ],
  ['holt_winters', holtWinters],
  [
    'changes',
    (_t, v, lo, hi) => {
      let changes = 0;
      for (let i = lo + 1; i < hi; i++)
        if (v[i] !== v[i - 1] && !(Number.isNaN(v[i]) && Number.isNaN(v[i - 1]))) changes++;
      return changes;
    },
  ],
  [
    'resets',
    (_t, v, lo, hi) => {
      let resets = 0;
      for (let i = lo + 1; i < hi; i++) if (v[i] < v[i - 1]) resets++;
      return resets;
    },
  ],
  ['avg_over_time', (_t, v, lo, hi) => avgOverTime(v, lo, hi)],
  ['sum_over_time', (_t, v, lo, hi) => sumOverTime(v, lo, hi)],
  ['count_over_time', (_t, _v, lo, hi) => hi - lo],
  ['last_over_time', (_t, v, _lo, hi) => v[hi - 1]],
  ['present_over_time', () => 1],
  ['absent_over_time', () => 1],
  [
    'max_over_time',
    (_t, v, lo, hi) => {
      let max = v[lo];
      for (let i = lo; i < hi; i++) if (v[i] > max || Number.isNaN(max)) max = v[i];
      return max;
    },
  ],
  [
    'min_over_time',
    (_t, v, lo, hi) => {
      let min = v[lo];
      for (let i = lo; i < hi; i++) if (v[i] < min || Number.isNaN(min)) min = v[i];
      return min;
    },
  ],
  ['stdvar_over_time', (_t, v, lo, hi) => variance(v, lo, hi)],
  ['stddev_over_time', (_t, v, lo, hi) => Math.sqrt(variance(v, lo, hi))],
  [
    'quantile_over_time',
    (_t, v, lo, hi, env) => {
      const values: number[] = [];
      for (let i = lo; i < hi; i++) values.push(v[i]);
      return quantile(env.args[0], values);
    },
  ],
]);
