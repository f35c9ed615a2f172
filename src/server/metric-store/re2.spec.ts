import { describe, expect, it } from 'vitest';
import { promtoolFailures, seriesText } from '../../../test/support/promtool-rules.js';
import { Random } from '../../../test/support/random.js';
import {
  CAPTURE_PATTERNS,
  CAPTURE_VALUES,
  PATTERNS,
  randomPattern,
  randomValue,
  VALUES,
} from '../../../test/support/re2-cases.js';
import { MetricInputError } from './errors.js';
import { compileMatcher } from './matchers.js';
import { SCRIPT_NAMES } from './re2-classes.js';
import { compileRe2, MAX_NFA_PROGRAM, Re2, type Re2Engine } from './re2.js';

/** What one engine accepts of `values`, or its error message. */
function accepted(pattern: string, values: string[], engine: Re2Engine | 'matcher'): string[] | string {
  try {
    if (engine === 'matcher') {
      const m = compileMatcher({ type: '=~', name: 'v', value: pattern });
      return values.filter((v) => m.matchesValue(v));
    }
    const re = new Re2(pattern, engine);
    return values.filter((v) => re.test(v));
  } catch (err) {
    if (!(err instanceof MetricInputError)) throw err;
    return err.message;
  }
}

/** Prometheus's parse error for a case (promtool prints `err: 1:3: parse error: <message>`). */
const promError = (failure: string | undefined): string | undefined =>
  /parse error: (.*)/.exec(failure ?? '')?.[1];

/**
 * Where Prometheus disagrees with `ours` (per pattern: the values matched, or the error message)
 * on `m{v=~pattern}` over VALUES: nothing when it matches the same values and fails the same way.
 */
async function disagreements(patterns: string[], ours: (string[] | string)[]): Promise<string[]> {
  const failures = await promtoolFailures(
    VALUES.map((v) => seriesText({ v })),
    patterns.map((p, i) => ({
      expr: `m{v=~${JSON.stringify(p)}}`,
      series: typeof ours[i] === 'string' ? [] : ours[i].map((v) => seriesText({ v })),
    })),
  );
  return patterns.flatMap((p, i) => {
    const failure = failures.get(i);
    const same = typeof ours[i] === 'string' ? promError(failure) === ours[i] : failure === undefined;
    return same ? [] : [`${JSON.stringify(p)}: ours ${JSON.stringify(ours[i])}\n${failure ?? 'accepted'}`];
  });
}

describe('Go regular expressions against Prometheus 2.42 (promtool test rules)', () => {
  it('match exactly the label values Prometheus matches, on both engines, and fail as it fails', async () => {
    // V8 is forced only on short values: on the long one some patterns would never finish there.
    const short = VALUES.filter((v) => v.length <= 20);
    const ours = PATTERNS.map((p) => accepted(p, VALUES, 'matcher'));
    const engines: string[] = [];
    PATTERNS.forEach((p, i) => {
      const nfa = accepted(p, VALUES, 'nfa');
      const js = accepted(p, short, 'js');
      const mine = ours[i];
      const onShort = typeof mine === 'string' ? mine : mine.filter((v) => v.length <= 20);
      if (JSON.stringify(nfa) !== JSON.stringify(mine) || JSON.stringify(js) !== JSON.stringify(onShort))
        engines.push(`${JSON.stringify(p)}: ${JSON.stringify({ mine, nfa, js })}`);
    });
    expect(engines).toEqual([]);
    expect(await disagreements(PATTERNS, ours)).toEqual([]);
    // Both kinds are exercised: a comparison that only ever saw errors proves little.
    expect(ours.filter((r) => typeof r === 'string').length).toBeGreaterThan(60);
    expect(ours.filter((r) => typeof r !== 'string' && r.length > 0).length).toBeGreaterThan(150);
  });

  it("know Go 1.19's Unicode class names, and only those", async () => {
    const categories =
      'C Cc Cf Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs';
    const names = [
      ...SCRIPT_NAMES,
      ...categories.split(' '),
      'Any',
      'Toto',
      'Kawi',
      'Zyyy',
      'Latn',
      'Lc',
      'Cn',
    ];
    const patterns = names.map((n) => `\\p{${n}}`);
    const ours = patterns.map((p) => accepted(p, VALUES, 'matcher'));
    expect(ours.filter((r) => typeof r === 'string').length).toBe(6);
    expect(await disagreements(patterns, ours)).toEqual([]);
  });

  it('capture what Go captures (label_replace), on both engines', async () => {
    const cases: { expr: string; series: string[] }[] = [];
    const mismatches: string[] = [];
    for (const pattern of CAPTURE_PATTERNS) {
      const auto = compileRe2(pattern);
      const nfa = new Re2(pattern, 'nfa');
      const outs = { groups: [] as string[], named: [] as string[] };
      for (const v of CAPTURE_VALUES) {
        const m = nfa.exec(v);
        if (JSON.stringify(m) !== JSON.stringify(auto.exec(v)))
          mismatches.push(`${pattern} on ${JSON.stringify(v)}: ${JSON.stringify([m, auto.exec(v)])}`);
        outs.groups.push(m ? [1, 2, 3].map((i) => m[i] ?? '').join('|') : '');
        outs.named.push(m ? (nfa.named(m, 'n') ?? '') : '');
      }
      for (const [template, out] of [
        ['${1}|${2}|${3}', outs.groups],
        ['${n}', outs.named],
      ] as const)
        cases.push({
          expr: `label_replace(m, "out", "${template}", "v", ${JSON.stringify(pattern)})`,
          series: CAPTURE_VALUES.map((v, i) => seriesText({ v, out: out[i] })),
        });
    }
    expect(mismatches).toEqual([]);
    const failures = await promtoolFailures(
      CAPTURE_VALUES.map((v) => seriesText({ v })),
      cases,
    );
    expect([...failures.values()]).toEqual([]);
  });
});

describe('random Go regular expressions (seeded)', () => {
  // label_replace shows both: a series gets `out` when the pattern matches, with groups 1 and 2.
  it('match and capture as Prometheus 2.42 does, on both engines', async () => {
    const r = new Random(20240502);
    const patterns = [...new Set(Array.from({ length: 400 }, () => randomPattern(r)))];
    const values = [...new Set(['', ...Array.from({ length: 60 }, () => randomValue(r))])];
    const problems: string[] = [];
    const cases: { expr: string; series: string[] }[] = [];
    for (const p of patterns) {
      let nfa: Re2;
      try {
        nfa = new Re2(p, 'nfa');
      } catch (err) {
        problems.push(`${JSON.stringify(p)}: ${(err as Error).message}`);
        continue;
      }
      // V8 always agrees on whether a value matches; on captures only where re2.ts lets it run
      // (JS forgets a group of a repetition's earlier pass, and one that matched empty under `?`).
      const js = new Re2(p, 'js');
      const auto = compileRe2(p);
      const outs = values.map((v) => {
        const m = nfa.exec(v);
        if ((m !== null) !== js.test(v) || JSON.stringify(auto.exec(v)) !== JSON.stringify(m))
          problems.push(`${JSON.stringify(p)} on ${JSON.stringify(v)}: ${JSON.stringify([m, auto.exec(v)])}`);
        return m ? `[${m[1] ?? ''}|${m[2] ?? ''}]` : '';
      });
      cases.push({
        expr: `label_replace(m, "out", ${JSON.stringify('[${1}|${2}]')}, "v", ${JSON.stringify(p)})`,
        series: values.map((v, i) => seriesText({ v, out: outs[i] })),
      });
    }
    expect(problems).toEqual([]);
    expect(cases.filter((c) => c.series.some((s) => s.includes('out='))).length).toBeGreaterThan(200);
    const failures = await promtoolFailures(
      values.map((v) => seriesText({ v })),
      cases,
    );
    expect([...failures.values()]).toEqual([]);
  });
});

describe('RE2 on our engines', () => {
  const matches = (re: string, s: string): boolean => compileRe2(re).test(s);

  it('anchors and keeps RE2 meanings', () => {
    expect(matches('a|b', 'a')).toBe(true);
    expect(matches('a|b', 'ab')).toBe(false);
    expect(matches('.*', 'a\nb')).toBe(false);
    expect(matches('(?s).*', 'a\nb')).toBe(true);
    expect(matches('\\s', '\v')).toBe(false);
    expect(matches('a(?i)b', 'aB')).toBe(true);
    expect(matches('a(?i)b', 'AB')).toBe(false);
    expect(matches('(?i:a)b', 'Ab')).toBe(true);
    expect(matches('(?i)[a-c]x', 'BX')).toBe(true);
    expect(matches('(?i)k', '\u212a')).toBe(true);
    expect(matches('(?m)a$\\n^b', 'a\nb')).toBe(true);
    expect(matches('\\101\\x42\\x{43}', 'ABC')).toBe(true);
    expect(matches('\\Qa.b\\E', 'a.b')).toBe(true);
    expect(matches('\\Qa.b\\E', 'axb')).toBe(false);
    expect(matches('[]a]+', ']a')).toBe(true);
    expect(matches('\\p{Greek}+', 'αβγ')).toBe(true);
    expect(compileRe2('(?U)(a+)a*').exec('aaa')![1]).toBe('a');
    expect(compileRe2('(?:(a)|b)*').exec('ab')).toEqual(['ab', 'a']);
  });

  it.each([
    ['a(?=b)', 'invalid or unsupported Perl syntax: `(?=`'],
    ['(?<n>a)', 'invalid or unsupported Perl syntax: `(?<`'],
    ['(a)\\1', 'invalid escape sequence: `\\1`'],
    ['\\u0041', 'invalid escape sequence: `\\u`'],
    ['a{1001}', 'invalid repeat count: `{1001}`'],
    ['(', 'missing closing ): `^(?:()$`'],
    ['a)(b', 'unexpected ): `a)(b`'],
    ['(?:'.repeat(1001) + ')'.repeat(1001), 'expression nests too deeply'],
    ['\ud800', 'invalid UTF-8: `\ud800)$`'],
  ])('refuses what Go refuses: %#', (pattern, message) => {
    expect(() => compileRe2(pattern)).toThrow(`error parsing regexp: ${message}`);
  });

  it('chooses V8 only where it cannot backtrack more than linearly', () => {
    for (const linear of [
      'a|b',
      'api-.*',
      '\\d+',
      '(foo|bar)baz?',
      '[^:]+:\\d+',
      '(?i)abc',
      'x{2,5}',
      '(a)b*',
    ])
      expect(new Re2(linear).backtracks, linear).toBe(true);
    for (const exponential of ['(a+)+', '(a|aa)+', '.*foo', 'a|ab', '(a*)*', '(?:a?){20}a{20}', '(.*a){12}'])
      expect(new Re2(exponential).backtracks, exponential).toBe(false);
  });

  it('answers hostile patterns in linear time (a backtracking engine would need 2^100 steps)', () => {
    const value = `${'a'.repeat(100)}b`;
    for (const pattern of ['(a+)+', '(a|aa)+', '(a*)*b?c', '(?:a?){100}a{100}c', '(.*a){50}c'])
      expect(compileMatcher({ type: '=~', name: 'v', value: pattern }).matchesValue(value), pattern).toBe(
        false,
      );
    expect(compileRe2('(a+)+b').test(value)).toBe(true);
    const long = 'a'.repeat(200_000);
    expect(compileRe2('(a|aa)+').exec(long)![0]).toBe(long);
  });

  it('stops a matcher that has used up its budget with a clean error', () => {
    const re = compileRe2('(?:.{0,10}x){100}');
    expect(() => re.test('x'.repeat(1000), { left: 10_000 })).toThrow(MetricInputError);
    expect(() => re.test('x'.repeat(1000), { left: 10_000 })).toThrow(/needs more than .* steps to match/);
    expect(re.test('x'.repeat(1000))).toBe(true);
  });

  it('refuses a pattern that needs the NFA and is larger than it runs', () => {
    // 2,100 instructions each (nested counts may multiply to 1000 at most).
    const copies = Math.floor(MAX_NFA_PROGRAM / 2100) + 1;
    expect(() => compileRe2('(?:.{0,10}x){100}'.repeat(copies))).toThrow(
      'error parsing regexp: expression too large',
    );
    // The same size is fine where V8 runs it linearly.
    expect(compileRe2('(?:[^x]{0,10}x){100}'.repeat(copies)).backtracks).toBe(true);
  });

  it('caches compiled expressions and errors by pattern', () => {
    expect(compileRe2('ab+c')).toBe(compileRe2('ab+c'));
    const thrown = (): unknown => {
      try {
        return compileRe2('(');
      } catch (err) {
        return err;
      }
    };
    const first = thrown();
    expect(first).toBeInstanceOf(MetricInputError);
    expect(thrown()).toBe(first);
  });
});
