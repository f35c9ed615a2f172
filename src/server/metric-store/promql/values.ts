/**
 * Values during evaluation, shaped as in Prometheus's engine: every expression evaluates to a
 * matrix with one point per evaluation step where it has a value (a scalar is one series without
 * labels), and functions see, at each step, a vector of samples.
 */
import type { AtModifier, VectorSelector } from './ast.js';
import type { LabelSet } from '../series.js';
import { PromqlCanceledError, PromqlTimeoutError, tooManySamples } from './errors.js';

export interface Series {
  metric: LabelSet;
  t: number[];
  v: number[];
}
export type Matrix = Series[];

export interface Sample {
  metric: LabelSet;
  v: number;
  /** The sample's own time where it matters (timestamp()); otherwise the evaluation time. */
  t: number;
  /**
   * Per-series data the consumer of the vector may keep here (a group key, a matching signature):
   * rangeEval hands out the same sample object for a series at every step.
   */
  memo?: unknown;
}
export type Vector = Sample[];

/** A selected series: raw samples, stale markers included, and (lazily) without them. */
export interface StoredSeries {
  labels: LabelSet;
  t: Float64Array;
  v: Float64Array;
  nonStale?: { t: Float64Array; v: Float64Array };
  /** Which samples are stale markers (null: none), from their bits (series.ts, staleFlags). */
  stale?: Uint8Array | null;
}

export interface Limits {
  /**
   * Samples read from storage; points of the intermediate results held at once (counted as they
   * are added); steps of any one evaluator (a subquery's are refused before it runs).
   */
  maxSamples: number;
  /** An absolute time (ms since the epoch) after which evaluation stops with a timeout. */
  deadline: number;
  /** Evaluation stops (PromqlCanceledError) once this fires, e.g. when the client went away. */
  signal?: AbortSignal;
}

/** How much work runs between two yields to the event loop. */
const WORK_PER_SLICE = 50_000;

/** What every evaluator of one query shares: the selected data, settings, limits. */
export class QueryContext {
  private work = 0;
  private samples = 0;
  /** Points of the intermediate results held now (Prometheus's currentSamples). */
  private held = 0;

  constructor(
    readonly data: Map<VectorSelector, StoredSeries[]>,
    readonly start: number,
    readonly end: number,
    readonly lookback: number,
    readonly subqueryStep: number,
    readonly limits: Limits,
  ) {}

  /** The time an `@` modifier fixes, with start() and end() being the query's. */
  atTime(at: AtModifier | null): number | null {
    return at === 'start' ? this.start : at === 'end' ? this.end : at;
  }

  countLoaded(n: number): void {
    this.samples += n;
    if (this.samples > this.limits.maxSamples) throw tooManySamples();
  }

  checkResult(m: Matrix): void {
    let points = 0;
    for (const s of m) points += s.t.length;
    if (points > this.limits.maxSamples) throw tooManySamples();
  }

  /**
   * Counts points added to a result being built: past maxSamples held at once, evaluation fails
   * there, before the arrays grow further.
   */
  hold(points: number): void {
    this.held += points;
    if (this.held > this.limits.maxSamples) throw tooManySamples();
  }

  /** A result its consumer is done with: its points are no longer held. */
  release(m: Matrix): void {
    for (const s of m) this.held -= s.t.length;
  }

  /**
   * Refuses an evaluator of this many steps before anything is allocated for them: each step of
   * even a constant is a point (`vector(1)[1y:1ms]` would be 31.5 billion).
   */
  checkSteps(steps: number): void {
    if (!(steps <= this.limits.maxSamples)) throw tooManySamples();
  }

  /** Throws once the caller has given up (the signal) or the deadline has passed. */
  checkDeadline(): void {
    if (this.limits.signal?.aborted) throw new PromqlCanceledError();
    if (Date.now() > this.limits.deadline) throw new PromqlTimeoutError();
  }

  /** Counts work done: true once a slice's worth is done, and the caller should `await pause()`. */
  tick(units: number): boolean {
    this.work += units;
    return this.work >= WORK_PER_SLICE;
  }

  /** Yields to the event loop (so the service stays responsive) and checks the deadline and signal. */
  async pause(): Promise<void> {
    this.work = 0;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.checkDeadline();
  }
}
