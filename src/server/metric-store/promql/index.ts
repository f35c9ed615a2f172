/** The PromQL engine's public surface (docs/metric-store-design.md, "PromQL"). */
export { parseExpr, parseSeriesSelector } from './parse.js';
export { MAX_NESTING } from './parse-scan.js';
export {
  instantQuery,
  rangeQuery,
  DEFAULT_LOOKBACK,
  DEFAULT_MAX_SAMPLES,
  DEFAULT_SUBQUERY_STEP,
} from './engine.js';
export type { InstantSample, QueryOptions, QueryResult, RangeSeries } from './engine.js';
export type { Expr } from './ast.js';
export {
  PromqlError,
  PromqlParseError,
  PromqlBadQueryError,
  PromqlExecutionError,
  PromqlTimeoutError,
  PromqlCanceledError,
  type PromqlErrorType,
} from './errors.js';
