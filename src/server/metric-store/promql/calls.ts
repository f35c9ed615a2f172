/**
 * Function calls, routed as Prometheus 2.42's evaluator routes them: timestamp() of a selector
 * reads sample times; a call with a range-vector argument (selector or subquery) runs per series
 * over sliding windows; every other call runs per step over its arguments' vectors.
 */
import { unwrapParens, type Call } from './ast.js';
import { valueType } from './check.js';
import type { Evaluator } from './evaluator.js';
import { containsSameLabelset, nonStale } from './evaluator.js';
import { PromqlExecutionError } from './errors.js';
import { absentLabels, INSTANT_FUNCTIONS } from './functions/instant.js';
import { RANGE_FUNCTIONS, type Window, type WindowEnv, type WindowFunction } from './functions/range.js';
import { dropMetricName } from './labels.js';
import type { Matrix } from './values.js';
import type { LabelSet } from '../series.js';

/** Window samples (and steps) a series' windows run before the evaluation may yield. */
const TICK_SLICE = 65_536;

interface WindowSource {
  series: { metric: LabelSet; t: ArrayLike<number>; v: ArrayLike<number> }[];
  range: number;
  offset: number;
  at: number | null;
  /** A subquery's result, released once the windows are done (stored samples are not held). */
  held: Matrix | null;
}

export async function evalCall(ev: Evaluator, e: Call): Promise<Matrix> {
  if (e.func === 'timestamp') {
    const arg = unwrapParens(e.args[0]);
    if (arg.type === 'vectorSelector') {
      const fn = INSTANT_FUNCTIONS.get('timestamp')!;
      return ev.rangeEval([ev.selectorSamples(arg)], (vectors, ts) => fn(vectors, e, ts, new Map()));
    }
  }
  const matrixIndex = e.args.findIndex((a) => {
    const u = unwrapParens(a);
    return u.type === 'matrixSelector' || u.type === 'subquery';
  });
  if (matrixIndex >= 0) return evalWindows(ev, e, matrixIndex);
  const inputs: (Matrix | null)[] = [];
  for (const arg of e.args) inputs.push(valueType(arg) === 'string' ? null : await ev.eval(arg));
  const fn = INSTANT_FUNCTIONS.get(e.func)!;
  const state = new Map<string, unknown>();
  return ev.rangeEval(inputs, (vectors, ts) => fn(vectors, e, ts, state));
}

async function windowSource(ev: Evaluator, e: Call, index: number): Promise<WindowSource> {
  const arg = unwrapParens(e.args[index]);
  if (arg.type === 'matrixSelector') {
    const sel = arg.selector;
    const stored = ev.ctx.data.get(sel) ?? [];
    const series = stored.map((s) => ({ metric: s.labels, ...nonStale(s) }));
    return { series, range: arg.range, offset: sel.offset, at: ev.ctx.atTime(sel.at), held: null };
  }
  if (arg.type !== 'subquery') throw new Error(`not a range vector: ${arg.type}`);
  const series = await ev.subquery(arg);
  return { series, range: arg.range, offset: arg.offset, at: ev.ctx.atTime(arg.at), held: series };
}

async function evalWindows(ev: Evaluator, e: Call, index: number): Promise<Matrix> {
  const source = await windowSource(ev, e, index);
  // The other arguments are scalars: their value at each step.
  const scalars: number[][] = [];
  const scalarMatrices: Matrix[] = [];
  for (let i = 0; i < e.args.length; i++) {
    if (i === index) continue;
    const m = await ev.eval(e.args[i]);
    scalarMatrices.push(m);
    scalars.push(m.length > 0 ? m[0].v : []);
  }
  const fn = RANGE_FUNCTIONS.get(e.func)!;
  const keepName = e.func === 'last_over_time';
  const { range, offset, at } = source;
  const out: Matrix = [];
  // One environment object, updated in place: this loop runs for every series at every step.
  const env = { ts: 0, rangeStart: 0, rangeEnd: 0, range, args: scalars.map(() => 0) };
  const plan: WindowPlan = {
    start: ev.start,
    interval: ev.interval,
    steps: ev.steps,
    at,
    offset,
    range,
    scalars,
    env,
    fn,
  };
  for (const s of source.series) {
    const run: WindowRun = { t: s.t, v: s.v, lo: 0, hi: 0, outT: [], outV: [], work: 0 };
    // A window costs about its length (long windows over many steps are the slow queries): the
    // steps run in slices of work, and between slices the evaluation yields and checks the deadline
    // and the signal, within one series too. The loop itself stays free of awaits, which keeps it fast.
    for (let step = 0; step < plan.steps;) {
      step = windowsFrom(plan, run, step);
      if (ev.ctx.tick(run.work)) await ev.ctx.pause();
    }
    ev.ctx.hold(run.outT.length);
    if (run.outT.length > 0)
      out.push({ metric: keepName ? s.metric : dropMetricName(s.metric), t: run.outT, v: run.outV });
  }
  for (const m of scalarMatrices) ev.ctx.release(m);
  if (source.held) ev.ctx.release(source.held);
  if (e.func === 'absent_over_time') return absentOverTime(ev, e, out);
  // 2.42 checks the whole result here (series that never share a step included).
  if (containsSameLabelset(out))
    throw new PromqlExecutionError('vector cannot contain metrics with the same labelset');
  return out;
}

/** What every series of a windowed call shares. */
interface WindowPlan {
  start: number;
  interval: number;
  steps: number;
  at: number | null;
  offset: number;
  range: number;
  scalars: number[][];
  env: WindowEnv;
  fn: WindowFunction;
}

/** One series' windows under way: its samples, the window's bounds so far, the points made. */
interface WindowRun {
  t: Window;
  v: Window;
  lo: number;
  hi: number;
  outT: number[];
  outV: number[];
  /** The work of the last slice (window samples and steps). */
  work: number;
}

/**
 * Runs a series' windows from step `from` until a slice of work (TICK_SLICE) is done or the steps
 * end; answers the next step. Synchronous: the caller yields between slices.
 */
function windowsFrom(plan: WindowPlan, run: WindowRun, from: number): number {
  const { start, interval, steps, at, offset, range, scalars, env, fn } = plan;
  const { t, v, outT, outV } = run;
  const n = t.length;
  let { lo, hi } = run;
  let work = 0;
  let step = from;
  for (; step < steps && work < TICK_SLICE; step++) {
    const ts = start + step * interval;
    const rangeEnd = (at ?? ts) - offset;
    const rangeStart = rangeEnd - range;
    while (lo < n && t[lo] < rangeStart) lo++;
    while (hi < n && t[hi] <= rangeEnd) hi++;
    work += hi - lo + 1;
    if (hi <= lo) continue;
    for (let j = 0; j < scalars.length; j++) env.args[j] = scalars[j][step];
    env.ts = ts;
    env.rangeStart = rangeStart;
    env.rangeEnd = rangeEnd;
    const value = fn(t, v, lo, hi, env);
    if (value !== undefined) {
      outT.push(ts);
      outV.push(value);
    }
  }
  run.lo = lo;
  run.hi = hi;
  run.work = work;
  return step;
}

/** 1 at the steps where no series had a sample in its window; nothing when every step had one. */
function absentOverTime(ev: Evaluator, e: Call, found: Matrix): Matrix {
  const seen = new Set<number>();
  for (const s of found) for (const t of s.t) seen.add(t);
  const t: number[] = [];
  for (let step = 0; step < ev.steps; step++) {
    const ts = ev.time(step);
    if (!seen.has(ts)) t.push(ts);
  }
  ev.ctx.release(found);
  ev.ctx.hold(t.length);
  if (t.length === 0) return [];
  return [{ metric: absentLabels(e.args[0]), t, v: t.map(() => 1) }];
}
