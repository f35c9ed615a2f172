/**
 * Prometheus 2.42's function table (promql/parser/functions.go): argument types, how many optional
 * trailing arguments (`variadic`: 0 none, n up to n more, -1 any number) and the result type.
 */
import type { ValueType } from '../ast.js';

export interface FunctionSignature {
  argTypes: ValueType[];
  variadic: number;
  returnType: ValueType;
}

const V: ValueType = 'vector';
const M: ValueType = 'matrix';
const S: ValueType = 'scalar';
const STR: ValueType = 'string';

const sig = (argTypes: ValueType[], returnType: ValueType, variadic = 0): FunctionSignature => ({
  argTypes,
  variadic,
  returnType,
});

const vectorToVector = sig([V], V);
const matrixToVector = sig([M], V);
const dateFunction = sig([V], V, 1);

export const FUNCTIONS: ReadonlyMap<string, FunctionSignature> = new Map([
  ['abs', vectorToVector],
  ['absent', vectorToVector],
  ['absent_over_time', matrixToVector],
  ['acos', vectorToVector],
  ['acosh', vectorToVector],
  ['asin', vectorToVector],
  ['asinh', vectorToVector],
  ['atan', vectorToVector],
  ['atanh', vectorToVector],
  ['avg_over_time', matrixToVector],
  ['ceil', vectorToVector],
  ['changes', matrixToVector],
  ['clamp', sig([V, S, S], V)],
  ['clamp_max', sig([V, S], V)],
  ['clamp_min', sig([V, S], V)],
  ['cos', vectorToVector],
  ['cosh', vectorToVector],
  ['count_over_time', matrixToVector],
  ['days_in_month', dateFunction],
  ['day_of_month', dateFunction],
  ['day_of_week', dateFunction],
  ['day_of_year', dateFunction],
  ['deg', vectorToVector],
  ['delta', matrixToVector],
  ['deriv', matrixToVector],
  ['exp', vectorToVector],
  ['floor', vectorToVector],
  // Native-histogram functions: they ignore float samples, so over float data they answer nothing.
  ['histogram_count', vectorToVector],
  ['histogram_sum', vectorToVector],
  ['histogram_fraction', sig([S, S, V], V)],
  ['histogram_quantile', sig([S, V], V)],
  ['holt_winters', sig([M, S, S], V)],
  ['hour', dateFunction],
  ['idelta', matrixToVector],
  ['increase', matrixToVector],
  ['irate', matrixToVector],
  ['label_replace', sig([V, STR, STR, STR, STR], V)],
  ['label_join', sig([V, STR, STR, STR], V, -1)],
  ['last_over_time', matrixToVector],
  ['ln', vectorToVector],
  ['log10', vectorToVector],
  ['log2', vectorToVector],
  ['max_over_time', matrixToVector],
  ['min_over_time', matrixToVector],
  ['minute', dateFunction],
  ['month', dateFunction],
  ['pi', sig([], S)],
  ['predict_linear', sig([M, S], V)],
  ['present_over_time', matrixToVector],
  ['quantile_over_time', sig([S, M], V)],
  ['rad', vectorToVector],
  ['rate', matrixToVector],
  ['resets', matrixToVector],
  ['round', sig([V, S], V, 1)],
  ['scalar', sig([V], S)],
  ['sgn', vectorToVector],
  ['sin', vectorToVector],
  ['sinh', vectorToVector],
  ['sort', vectorToVector],
  ['sort_desc', vectorToVector],
  ['sqrt', vectorToVector],
  ['stddev_over_time', matrixToVector],
  ['stdvar_over_time', matrixToVector],
  ['sum_over_time', matrixToVector],
  ['tan', vectorToVector],
  ['tanh', vectorToVector],
  ['time', sig([], S)],
  ['timestamp', vectorToVector],
  ['vector', sig([S], V)],
  ['year', dateFunction],
]);
