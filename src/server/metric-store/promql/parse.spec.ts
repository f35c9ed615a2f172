import { describe, expect, it } from 'vitest';
import type { Expr } from './ast.js';
import { PromqlParseError } from './errors.js';
import { parseExpr, parseSeriesSelector } from './parse.js';

/** A compact rendering of the tree: enough to see grouping and where modifiers landed. */
function show(e: Expr): string {
  switch (e.type) {
    case 'number':
      return String(e.value);
    case 'string':
      return JSON.stringify(e.value);
    case 'paren':
      return `(${show(e.expr)})`;
    case 'unary':
      return `${e.op}{${show(e.expr)}}`;
    case 'binary':
      return `[${show(e.lhs)} ${e.op}${e.returnBool ? ' bool' : ''} ${show(e.rhs)}]`;
    case 'aggregate':
      return `${e.op}${e.without ? ' without' : ' by'}(${e.grouping.join(',')})(${e.param ? `${show(e.param)}, ` : ''}${show(e.expr)})`;
    case 'call':
      return `${e.func}(${e.args.map(show).join(', ')})`;
    case 'vectorSelector':
      return `${e.name || '{}'}${e.offset ? ` offset ${e.offset}` : ''}${e.at !== null ? ` @ ${e.at}` : ''}`;
    case 'matrixSelector':
      return `${show(e.selector)}[${e.range}]`;
    case 'subquery':
      return `(${show(e.expr)})[${e.range}:${e.step}]${e.offset ? ` offset ${e.offset}` : ''}`;
  }
}

function parseError(query: string): PromqlParseError {
  try {
    parseExpr(query);
  } catch (err) {
    if (err instanceof PromqlParseError) return err;
    throw err;
  }
  throw new Error(`parsed: ${query}`);
}

describe('parseExpr', () => {
  it.each([
    ['1 + 2 * 3', '[1 + [2 * 3]]'],
    ['2 ^ 3 ^ 2', '[2 ^ [3 ^ 2]]'],
    // Unary minus binds looser than ^ (lezer folds the sign into the literal; 2.42 does not).
    ['-2 ^ 2', '-{[2 ^ 2]}'],
    ['2 ^ -1', '[2 ^ -1]'],
    ['-x', '-{x}'],
    ['- - 1', '1'],
    ['a or b and c unless d', '[a or [[b and c] unless d]]'],
    ['a == bool 1 + 2', '[a == bool [1 + 2]]'],
    // offset, @ and ranges bind tighter than any operator.
    ['a / b offset 5m', '[a / b offset 300000]'],
    ['a + b @ 100', '[a + b @ 100000]'],
    ['-x offset 1m', '-{x offset 60000}'],
    // lezer puts this offset above `a unless b`, and `<=` above that.
    ['a unless b offset 5m <= c', '[a unless [b offset 300000 <= c]]'],
    ['-a offset 1m ^ 2 * b', '[-{[a offset 60000 ^ 2]} * b]'],
    ['rate(x[5m] offset -1m @ 1.5)', 'rate(x offset -60000 @ 1500[300000])'],
    ['x @ start()', 'x @ start'],
    ['sum(x) by (a, b)', 'sum by(a,b)(x)'],
    ['topk without (a) (3, x)', 'topk without(a)(3, x)'],
    ['holt_winters(x[1h], 0.5, 0.1)', 'holt_winters(x[3600000], 0.5, 0.1)'],
    ['max_over_time(x[10m:1m] offset 1h)', 'max_over_time((x)[600000:60000] offset 3600000)'],
    ['rate(x[1h30m:])', 'rate((x)[5400000:0])'],
    ['0x1F + 010 + 1.e3', '[[31 + 8] + 1000]'],
    ['SUM(x) BY (a)', 'sum by(a)(x)'],
  ])('%s', (query, tree) => {
    expect(show(parseExpr(query))).toBe(tree);
  });

  it('reads selectors: the name matcher last, Go string escapes, regexes checked', () => {
    const e = parseExpr('x{a="\\u00e9\\x41", b=~\'c|d\', e!~`\\d`}');
    expect(e).toMatchObject({
      type: 'vectorSelector',
      matchers: [
        { type: '=', name: 'a', value: 'éA' },
        { type: '=~', name: 'b', value: 'c|d' },
        { type: '!~', name: 'e', value: '\\d' },
        { type: '=', name: '__name__', value: 'x' },
      ],
    });
    expect(parseSeriesSelector('{job="a"}')).toEqual([{ type: '=', name: 'job', value: 'a' }]);
    expect(() => parseSeriesSelector('rate(x[5m])')).toThrow(PromqlParseError);
  });

  it.each([
    ['sum(', /unexpected/],
    ['', /no expression found/],
    ['foo(x)', /unknown function with name "foo"/],
    ['double_exponential_smoothing(x[5m], 0.5, 0.5)', /unknown function/],
    ['limitk(1, x)', /unknown function/],
    ['x[5]', /missing unit character in duration/],
    ['x[0s]', /duration must be greater than 0/],
    ['x[5m+1m]', /duration/],
    ['x offset 5m offset 1m', /offset may not be set multiple times/],
    ['x @ 1 @ 2', /may not be set multiple times/],
    ['(x) @ 1', /@ modifier must be preceded by/],
    ['sum(x) offset 1m', /offset modifier must be preceded by/],
    ['x offset 1m [5m]', /no offset modifiers allowed before range/],
    ['rate(x)', /expected type range vector in call to function "rate", got instant vector/],
    ['abs(x, x)', /expected 1 argument\(s\) in call to "abs", got 2/],
    ['label_join(x)', /expected at least 3 argument\(s\)/],
    ['round(x, 1, 2)', /expected at most 2 argument\(s\)/],
    ['sum(x, y)', /wrong number of arguments for aggregate expression provided, expected 1, got 2/],
    ['topk(x)', /wrong number of arguments/],
    ['count_values(1, x)', /expected type string in aggregation parameter/],
    ['1 < 2', /comparisons between scalars must use BOOL modifier/],
    ['x + bool x', /bool modifier can only be used on comparison operators/],
    ['x and on(a) group_left x', /no grouping allowed for "and" operation/],
    ['1 and x', /set operator "and" not allowed in binary scalar expression/],
    ['1 + on(a) 2', /vector matching only allowed between instant vectors/],
    ['x + on(a) group_left(a) x', /must not occur in ON and GROUP clause at once/],
    ['x + x[5m]', /binary expression must contain only scalar and instant vector types/],
    ['-x[5m]', /unary expression only allowed on expressions of type scalar or instant vector/],
    ['x[5m][5m:]', /subquery is only allowed on instant vector/],
    ['{}', /at least one non-empty matcher/],
    ['{a=~".*"}', /at least one non-empty matcher/],
    ['x{__name__="y"}', /metric name must not be set twice/],
    ['x{a=~"("}', /error parsing regexp/],
    ['x{a=~"a(?=b)"}', /error parsing regexp/],
    ['x{a="\\q"}', /invalid string literal/],
    ['1e400', /bad number/],
    ['sum by (nan) (x)', /grouping opts/],
    ['atan2', /atan2/],
  ])('refuses %s', (query, message) => {
    const err = parseError(query);
    expect(err.errorType).toBe('bad_data');
    expect(err.message).toMatch(/^\d+:\d+: parse error: /);
    expect(err.message).toMatch(message);
  });
});

describe('nesting limit', () => {
  const deep =
    /^1:\d+: parse error: query is nested too deeply: more than 500 levels of parentheses, calls, subqueries or operators$/;
  const chain = (n: number, term: string, op: string) => Array(n).fill(term).join(op);

  // Each of these overflowed a stack somewhere (lezer's tree building, our conversion, the type
  // checks, the evaluator) or was cut by lezer with a misleading "unexpected" error.
  it.each([
    ['a 50,000-term ^ chain', chain(50_000, '2', '^')],
    ['a 3,000-term ^ chain', chain(3_000, '2', '^')],
    ['a 50,000-term + chain', chain(50_000, '2', '+')],
    ['a 50,000-term or chain', chain(50_000, 'up', ' or ')],
    ['10,000 parentheses', `${'('.repeat(10_000)}1${')'.repeat(10_000)}`],
    ['10,000 unclosed parentheses', `${'('.repeat(10_000)}1`],
    ['10,000 unary minuses', `${'-'.repeat(10_000)}x`],
    ['10,000 nested calls', `${'abs('.repeat(10_000)}x${')'.repeat(10_000)}`],
    ['10,000 nested aggregations', `${'sum('.repeat(10_000)}x${')'.repeat(10_000)}`],
    ['1,000 nested subqueries', `${'max_over_time('.repeat(1000)}x${'[1m:1s])'.repeat(1000)}`],
    ['1,000 chained subqueries', `x${'[1m:1s]'.repeat(1000)}`],
    ['1,000 offsets', `x${' offset 1m'.repeat(1000)}`],
    ['operators and brackets together', `${'abs(1 + 1 + '.repeat(200)}x${')'.repeat(200)}`],
  ])('refuses %s before parsing it, naming the limit', (_name, query) => {
    const err = parseError(query);
    expect(err.errorType).toBe('bad_data');
    expect(err.message).toMatch(deep);
  });

  it('says where the limit was passed', () => {
    expect(parseError(`${'('.repeat(10_000)}1${')'.repeat(10_000)}`).message).toMatch(/^1:501: /);
    expect(parseError(chain(1000, '2', '^')).message).toMatch(/^1:1002: /);
  });

  it('parses anything within it, deep chains by 2.42 precedence', () => {
    expect(show(parseExpr(chain(4, '2', '^')))).toBe('[2 ^ [2 ^ [2 ^ 2]]]');
    expect(parseExpr(chain(499, 'x', '^')).type).toBe('binary');
    expect(parseExpr(`${'('.repeat(499)}1${')'.repeat(499)}`).type).toBe('paren');
    expect(parseExpr(`${'abs('.repeat(240)}-x${')'.repeat(240)}`).type).toBe('call');
    // Arguments nest side by side, not one in another; strings, comments and matchers hold no operators.
    const wide = `max(${chain(300, 'x', ' + ')}) + on() group_left max(${chain(150, 'x', ' * ')})`;
    expect(parseExpr(wide).type).toBe('binary');
    expect(
      parseExpr(`label_replace(${chain(300, 'x', '+')}, "a", "${'-'.repeat(1000)}", "b", "(.*)")`).type,
    ).toBe('call');
    expect(parseExpr(`x{a!="${'+'.repeat(600)}", b=~"c", d!~"e"} # ${'-'.repeat(600)}`).type).toBe(
      'vectorSelector',
    );
  });
});
