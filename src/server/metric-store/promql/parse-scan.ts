/**
 * A token-level pass before the lezer parser, where the grammar of `@prometheus-io/lezer-promql`
 * (Prometheus 3) and Prometheus 2.42 disagree: `holt_winters` (renamed
 * `double_exponential_smoothing` in 3.0, which 2.42 does not know), calls of unknown functions
 * (2.42: "unknown function with name"), and `1.e3` and `0X1F`, which lezer does not read.
 */
import { PromqlParseError } from './errors.js';
import { FUNCTIONS } from './functions/signatures.js';

export const AGGREGATORS: ReadonlySet<string> = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
]);

/** Words 2.42's lexer reads as keywords whatever their case; a `(` may follow them. */
const KEYWORDS = new Set([
  ...AGGREGATORS,
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'atan2',
  'offset',
  'start',
  'end',
]);

/** The name lezer knows holt_winters by. */
export const HOLT_WINTERS_ALIAS = 'double_exponential_smoothing';

export function positionOf(source: string, offset: number): { line: number; column: number } {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/** The source with `holt_winters(` renamed for lezer; throws on a call of an unknown function. */
export function prepareSource(source: string): string {
  let out = '';
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (c === '"' || c === "'" || c === '`') {
      const end = stringEnd(source, i);
      out += source.slice(i, end);
      i = end;
      continue;
    }
    if (c === '#') {
      const end = source.indexOf('\n', i);
      const stop = end < 0 ? source.length : end;
      out += source.slice(i, stop);
      i = stop;
      continue;
    }
    // lezer reads neither `1.e3` nor `0X1F`; 2.42 reads them as 1000 and 31.
    const number = /^(?:\d+\.(?=[eE][+-]?\d)|0X(?=[0-9a-fA-F]))/.exec(source.slice(i, i + 64));
    if (number && (i === 0 || !/[A-Za-z0-9_:.]/.test(source[i - 1]))) {
      out += number[0] === '0X' ? '0x' : `${number[0]}0`;
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(source.slice(i, i + 256));
    // An identifier starts only where no number or identifier character precedes it.
    if (word && (i === 0 || !/[A-Za-z0-9_:.]/.test(source[i - 1]))) {
      const name = word[0];
      const calls = /^\s*\(/.test(source.slice(i + name.length));
      if (calls && !KEYWORDS.has(name.toLowerCase()) && !FUNCTIONS.has(name))
        throw new PromqlParseError(`unknown function with name "${name}"`, positionOf(source, i));
      out += calls && name === 'holt_winters' ? HOLT_WINTERS_ALIAS : name;
      i += name.length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

function stringEnd(source: string, start: number): number {
  const quote = source[start];
  let i = start + 1;
  while (i < source.length && source[i] !== quote) {
    if (source[i] === '\\' && quote !== '`') i++;
    i++;
  }
  return Math.min(i + 1, source.length);
}
