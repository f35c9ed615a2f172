import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MetricInputError } from './errors.js';
import { labelsFromRecord } from './labels.js';
import { compileMatcher, compileRegex, matchesAll } from './matchers.js';
import { translateRe2 } from './re2.js';

/** Label values every pattern is tried on: case, Unicode, newlines, metacharacters. */
const VALUES = [
  ...['', 'a', 'b', 'aa', 'ab', 'aab', 'abc', 'ABC', 'Abc', 'foo', 'foobar', 'barfoo', 'a.b', 'a-b', 'a b'],
  ...[
    'a\nb',
    'a\rb',
    'a\tb',
    'a\vb',
    'a\fb',
    '\n',
    'a\n',
    '0',
    '123',
    'a1_',
    '_',
    'k',
    'K',
    '\u212a',
    'ſ',
    's',
  ],
  ...['é', 'É', 'µ', 'Ω', 'ω', '😀', 'x😀y', '{', '}', '{}', 'a{2}', 'a{,2}', '\\', '[', ']', '$', '^', '-'],
  ...['\u2028', '\u00a0', '\u0007', 'a\u0000b', 'αβγ', '日本', 'a.b.c', '10.0.0.1:9100', 'api-7f9c', 'x|y'],
];

/** Go-valid patterns and Go syntax errors; the differential test runs each through Prometheus. */
const PATTERNS = [
  ...['', '.*', '.+', '.', '..', 'a', 'a|b', 'a|', 'abc|foo', 'foo.*', '.*foo', '.*o.*', 'a.b', 'a\\.b'],
  ...['(?i)abc', '(?i)k', '(?i)s', '(?i)é', '(?i)[a-z]+', '(?i)ω', '(?i)\\w+', '(?i)[^a-z]', '(?i)(?i)a'],
  ...['(?s)a.b', '(?s:a.b)', 'a(?s:.)b', '(?s).*', '(?m)^a$', '(?m)a$\\n?b?', '(?ms).+'],
  ...['\\d+', '\\D', '\\s', '\\S+', '\\w+', '\\W', '[\\d]+', '[\\D]', '[\\s]', '[\\S]+', '[^\\w]', '[\\W]'],
  ...['[[:alpha:]]+', '[[:^alpha:]]', '[[:punct:]]', '[[:space:]]', '[[:word:][:space:]]+', '[[:xdigit:]]+'],
  ...['[^a]', '[]a]', '[^]a]', '[a-]', '[-a]', '[a\\-z]+', '[\\]\\[]', '[.]', '[{}]+', '[\\^$]', '[a-c]+'],
  ...['\\pL', '\\pL+', '\\p{Greek}+', '\\PL', '\\p{^L}', '[\\p{Lu}]', '[^\\p{L}]', '\\p{Han}+', '\\pN+'],
  ...['\\x61', '\\x{1F600}', 'x\\x{1f600}y', '\\141', '\\0', 'a\\000b', '\\a', '\\f', '\\v', '\\t', '\\r'],
  ...['\\Qa.b\\E', '\\Q{}\\E', 'a\\Q', '\\Q.*'],
  ...['a{2}', 'a{,2}', '{', '}', '{}', 'a{2,}', 'a{1,2}b', 'a{0}', '\\{\\}', 'a{2}?', 'a*?', 'a+?b', 'a??'],
  ...['\\$', '\\^', '^a', 'a$', '^', '$', '^*a', 'a$*', '\\Aa\\z', '\\bfoo', 'foo\\b', 'a\\Bb', '\\b'],
  ...['(?P<n>a)b', '(a)(b)c?', '(?:a|b)+', '(a|b|c)*', '()', '(|a)', 'x\\|y', '\\-', '\\_'],
  ...['10\\.0\\.0\\.\\d+:9100', 'api-[0-9a-f]+', '(foo|bar)baz?', 'µ|Ω', '日.'],
  // Go syntax errors.
  ...['(', ')', 'a)', '*a', '+', 'a**', 'a+*', 'a{1001}', 'a{2,1}', '[z-a]', '[a', '[]', '\\C', '\\1'],
  ...['\\8', '(?<n>a)', '(?=a)', '(?!a)', '(?<=a)', '(?P<n>a)(?P<n>b)', '(?P<>a)', '\\', '[[:foo:]]'],
  ...[
    '\\p{Foo}',
    '\\x{110000}',
    '\\xZ',
    'x{2}{3}',
    '(?i',
    '(?z)',
    '(?)',
    '(?i-)',
    '\\é',
    '\\G',
    '\\Z',
    '\\z+',
  ],
];

/** Go accepts these; this engine refuses them as unsupported (re2.ts says why). */
const UNSUPPORTED = ['(a+)+', '(a{1,3})*', '(.*x)+$', '(?U)a*', 'a(?i)b', '(?i:a)b', '(?i)(?-i)a'];
PATTERNS.push(...UNSUPPORTED);

/** What our matcher says for every value, or the Go error code when our translation refuses. */
function ours(pattern: string): { accepted: string[] } | { error: string } {
  try {
    const m = compileMatcher({ type: '=~', name: 'v', value: pattern });
    return { accepted: VALUES.filter((v) => m.matchesValue(v)) };
  } catch (err) {
    if (!(err instanceof MetricInputError)) throw err;
    return { error: err.message };
  }
}

const run = promisify(execFile);

describe('regex matchers against Prometheus 2.42 (promtool test rules)', () => {
  it('accept exactly the label values Prometheus accepts, and refuse what it refuses', async () => {
    const series = (v: string) => `m{v=${JSON.stringify(v)}}`;
    const results = PATTERNS.map(ours);
    const tests = PATTERNS.map((pattern, i) => {
      const result = results[i];
      return {
        expr: `m{v=~${JSON.stringify(pattern)}}`,
        eval_time: `${i}s`,
        exp_samples:
          'accepted' in result ? result.accepted.map((v) => ({ labels: series(v), value: 1 })) : [],
      };
    });
    const file = {
      rule_files: [],
      evaluation_interval: '1s',
      tests: [
        {
          interval: '1s',
          input_series: VALUES.map((v) => ({ series: series(v), values: `1+0x${PATTERNS.length}` })),
          promql_expr_test: tests,
        },
      ],
    };
    const dir = mkdtempSync(join(tmpdir(), 'promtool-'));
    try {
      writeFileSync(join(dir, 'tests.yml'), JSON.stringify(file));
      const out = await run('promtool', ['test', 'rules', join(dir, 'tests.yml')]).then(
        (r) => r.stdout + r.stderr,
        (err: { stdout: string; stderr: string }) => err.stdout + err.stderr,
      );
      // Failures name their evaluation time, which is the pattern's index in seconds.
      const failures = new Map<number, string>();
      for (const block of out.split(/(?=\n\s+expr: )/)) {
        const t = /time: (?:(\d+)m)?(\d+)s/.exec(block);
        if (t) failures.set(Number(t[1] ?? 0) * 60 + Number(t[2]), block.trim());
      }
      const problems: string[] = [];
      PATTERNS.forEach((pattern, i) => {
        const result = results[i];
        const failure = failures.get(i);
        if ('accepted' in result) {
          if (failure)
            problems.push(`${JSON.stringify(pattern)}: ours ${JSON.stringify(result.accepted)}\n${failure}`);
        } else if (/^error parsing regexp/.test(result.error)) {
          const code = /^error parsing regexp: ([^:`]+)/.exec(result.error)![1];
          if (!failure?.includes(`error parsing regexp: ${code}`))
            problems.push(
              `${JSON.stringify(pattern)}: ours ${result.error}\n${failure ?? 'Prometheus accepts it'}`,
            );
        } else if (!UNSUPPORTED.includes(pattern) || failure?.includes('err:'))
          problems.push(`${JSON.stringify(pattern)}: ours ${result.error}\n${failure ?? ''}`);
        if (UNSUPPORTED.includes(pattern) && 'accepted' in result) problems.push(`${pattern} is accepted`);
      });
      expect(problems).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('regex translation', () => {
  it('says why it refuses what Go accepts but a backtracking engine cannot do faithfully or safely', () => {
    const reasons = [/exponential/, /exponential/, /exponential/, /ungreedy/, /only at the start/];
    UNSUPPORTED.forEach((pattern, i) => {
      expect(() => translateRe2(pattern)).toThrow(/^unsupported regular expression/);
      expect(() => translateRe2(pattern)).toThrow(reasons[i] ?? /only at the start/);
    });
    expect(() => translateRe2('a\ud800')).toThrow(/invalid UTF-8/);
  });

  it('caches compiled expressions and errors by pattern', () => {
    expect(compileRegex('ab+c')).toBe(compileRegex('ab+c'));
    expect(() => compileRegex('(')).toThrow(/missing closing \)/);
    expect(() => compileRegex('(')).toThrow(MetricInputError);
  });
});

describe('matchers on label sets', () => {
  const up = labelsFromRecord({ __name__: 'up', job: 'node', instance: 'h:9100' });
  const m = (type: '=' | '!=' | '=~' | '!~', name: string, value: string) =>
    compileMatcher({ type, name, value });

  it('treat a missing label as the empty value', () => {
    expect(m('=', 'x', '').matches(up)).toBe(true);
    expect(m('!=', 'x', '').matches(up)).toBe(false);
    expect(m('!=', 'job', '').matches(up)).toBe(true);
    expect(m('=~', 'x', '.*').matches(up)).toBe(true);
    expect(m('=~', 'x', '.+').matches(up)).toBe(false);
    expect(m('!~', 'x', 'a|').matches(up)).toBe(false);
    expect(m('=', 'job', '').matches(up)).toBe(false);
  });

  it('anchor regular expressions and combine matchers with and', () => {
    expect(m('=~', 'job', 'no').matches(up)).toBe(false);
    expect(m('=~', 'job', 'no.*').matches(up)).toBe(true);
    expect(m('!~', 'job', 'node|web').matches(up)).toBe(false);
    expect(matchesAll([m('=', '__name__', 'up'), m('=~', 'instance', '.*:9100')], up)).toBe(true);
    expect(matchesAll([m('=', '__name__', 'up'), m('!=', 'job', 'node')], up)).toBe(false);
    expect(() => compileMatcher({ type: '==' as '=', name: 'a', value: '' })).toThrow(/unknown matcher type/);
  });
});
