/**
 * PromQL label matchers as predicates, with Prometheus's semantics: a missing label has the value
 * "" (so `{x=""}` matches series without x and `{x!=""}` requires it), regular expressions are
 * Go syntax (re2.ts) fully anchored. Storage selects and the engine's own checks both use them.
 */
import { MetricInputError } from './errors.js';
import { labelValue } from './labels.js';
import { compileRe2, matchBudget } from './re2.js';
import type { LabelSet, Matcher } from './series.js';

export interface CompiledMatcher {
  readonly matcher: Matcher;
  /** Whether a label value (the empty string for a missing label) satisfies the matcher. */
  matchesValue(value: string): boolean;
  matches(labels: LabelSet): boolean;
  /** For the index: the exact values a `=~` accepts when it is an alternation of literals. */
  readonly literals?: ReadonlySet<string>;
}

/** `a|b|c` with no metacharacters: its alternatives, so matching is a set lookup. */
function literalAlternatives(pattern: string): Set<string> | undefined {
  if (!/^[\p{L}\p{N}_\-:/ ,|@%=#~'"!&;<>]*$/u.test(pattern)) return undefined;
  return new Set(pattern.split('|'));
}

/** A value cache per regex matcher: label values repeat across series. */
const VALUE_CACHE_LIMIT = 4096;

function regexPredicate(pattern: string): { test: (v: string) => boolean; literals?: Set<string> } {
  const literals = literalAlternatives(pattern);
  if (literals) return { test: (v) => literals.has(v), literals };
  if (pattern === '.*') return { test: (v) => !v.includes('\n') };
  if (pattern === '.+') return { test: (v) => v !== '' && !v.includes('\n') };
  const re = compileRe2(pattern);
  // One budget per compiled matcher, that is per selection: see re2.ts.
  const budget = matchBudget();
  const seen = new Map<string, boolean>();
  return {
    test: (v) => {
      let hit = seen.get(v);
      if (hit === undefined) {
        hit = re.test(v, budget);
        if (seen.size >= VALUE_CACHE_LIMIT) seen.clear();
        seen.set(v, hit);
      }
      return hit;
    },
  };
}

export function compileMatcher(matcher: Matcher): CompiledMatcher {
  const { name, value, type } = matcher;
  let test: (v: string) => boolean;
  let literals: Set<string> | undefined;
  switch (type) {
    case '=':
      test = (v) => v === value;
      literals = new Set([value]);
      break;
    case '!=':
      test = (v) => v !== value;
      break;
    case '=~': {
      const p = regexPredicate(value);
      test = p.test;
      literals = p.literals;
      break;
    }
    case '!~': {
      const p = regexPredicate(value);
      test = (v) => !p.test(v);
      break;
    }
    default:
      throw new MetricInputError(`unknown matcher type ${JSON.stringify(type)}`);
  }
  return {
    matcher,
    literals,
    matchesValue: test,
    matches: (labels) => test(labelValue(labels, name)),
  };
}

/** True when every matcher matches the label set. */
export function matchesAll(matchers: readonly CompiledMatcher[], labels: LabelSet): boolean {
  for (const m of matchers) if (!m.matches(labels)) return false;
  return true;
}
