import { describe, expect, it } from 'vitest';
import { MetricInputError } from './errors.js';
import { labelsFromRecord } from './labels.js';
import { compileMatcher, matchesAll } from './matchers.js';

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

  it("refuse an invalid regular expression with Go's message (re2.spec.ts has the rest)", () => {
    expect(() => m('=~', 'job', '(')).toThrow(MetricInputError);
    expect(() => m('!~', 'job', 'a**')).toThrow(
      'error parsing regexp: invalid nested repetition operator: `**`',
    );
  });
});
