/**
 * label_replace and label_join (promql/functions.go, 2.42), with Go's regexp template expansion
 * (`$1`, `${1}`, `$name`, `$$`), whose rule that a name is the longest run of letters, digits and
 * underscores makes `$1x` the (missing) group "1x".
 */
import { MetricInputError } from '../../errors.js';
import { isValidLabelName, labelValue } from '../../labels.js';
import { compileRe2, matchBudget, type Budget, type Re2 } from '../../re2.js';
import type { LabelSet } from '../../series.js';
import { PromqlExecutionError } from '../errors.js';
import { seriesKey, setLabel } from '../labels.js';
import type { InstantFunction } from './instant.js';
import { stringArg } from '../ast.js';

const NAME_CHAR = /[\p{L}\p{Nd}_]/u;

/** Go's Regexp.ExpandString for one match of `re`. */
export function expandTemplate(template: string, re: Re2, match: readonly (string | undefined)[]): string {
  let out = '';
  let i = 0;
  while (i < template.length) {
    const dollar = template.indexOf('$', i);
    if (dollar < 0) break;
    out += template.slice(i, dollar);
    i = dollar + 1;
    if (template[i] === '$') {
      out += '$';
      i++;
      continue;
    }
    const brace = template[i] === '{';
    let j = brace ? i + 1 : i;
    const nameStart = j;
    while (j < template.length && NAME_CHAR.test(template[j])) j++;
    const name = template.slice(nameStart, j);
    if (name === '' || (brace && template[j] !== '}')) {
      out += '$';
      continue;
    }
    i = brace ? j + 1 : j;
    const num = /^\d+$/.test(name) && !(name.length > 1 && name[0] === '0') ? Number(name) : -1;
    if (num >= 0 && num < 1e8) out += match[num] ?? '';
    else if (num < 0) out += re.named(match, name) ?? '';
  }
  return out + template.slice(i);
}

export const labelReplace: InstantFunction = ([vec], call, _ts, state) => {
  const [, dstArg, replArg, srcArg, regexArg] = call.args;
  const dst = stringArg(dstArg);
  const repl = stringArg(replArg);
  const src = stringArg(srcArg);
  const regexText = stringArg(regexArg);
  let regex = state.get('regex') as Re2 | undefined;
  if (!regex) {
    try {
      regex = compileRe2(regexText);
    } catch {
      throw new PromqlExecutionError(`invalid regular expression in label_replace(): ${regexText}`);
    }
    if (!isValidLabelName(dst))
      throw new PromqlExecutionError(`invalid destination label name in label_replace(): ${dst}`);
    state.set('regex', regex);
    state.set('budget', matchBudget());
  }
  const re = regex;
  const budget = state.get('budget') as Budget;
  const done = cache(state);
  return vec.map((s) => {
    const key = seriesKey(s.metric);
    let metric = done.get(key);
    if (!metric) {
      const match = execute(() => re.exec(labelValue(s.metric, src), budget));
      metric = match ? setLabel(s.metric, dst, expandTemplate(repl, re, match)) : s.metric;
      done.set(key, metric);
    }
    return { metric, v: s.v, t: s.t };
  });
};

export const labelJoin: InstantFunction = ([vec], call, _ts, state) => {
  const dst = stringArg(call.args[1]);
  const separator = stringArg(call.args[2]);
  const sources = call.args.slice(3).map(stringArg);
  for (const src of sources)
    if (!isValidLabelName(src))
      throw new PromqlExecutionError(`invalid source label name in label_join(): ${src}`);
  if (!isValidLabelName(dst))
    throw new PromqlExecutionError(`invalid destination label name in label_join(): ${dst}`);
  const done = cache(state);
  return vec.map((s) => {
    const key = seriesKey(s.metric);
    let metric = done.get(key);
    if (!metric) {
      metric = setLabel(s.metric, dst, sources.map((src) => labelValue(s.metric, src)).join(separator));
      done.set(key, metric);
    }
    return { metric, v: s.v, t: s.t };
  });
};

/** A match, with a matching budget used up reported as the query's failure. */
function execute<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    if (err instanceof MetricInputError) throw new PromqlExecutionError(err.message);
    throw err;
  }
}

function cache(state: Map<string, unknown>): Map<string, LabelSet> {
  let done = state.get('labels') as Map<string, LabelSet> | undefined;
  if (!done) state.set('labels', (done = new Map()));
  return done;
}
