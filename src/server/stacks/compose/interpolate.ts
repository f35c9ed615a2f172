import type { Issues } from '../definition/issues.js';
import type { YamlMap, YamlNode, YamlScalar, YamlSeq } from '../definition/yaml-tree.js';

/**
 * Compose variable interpolation (the Compose Specification's "Interpolation"), on the positioned
 * tree of yaml-tree.ts. The syntax follows compose-go's `template` package, the reference
 * implementation:
 *
 * - `$NAME` and `${NAME}`, names `[A-Za-z_][A-Za-z0-9_]*` (no dots: compose-go has none either);
 * - `${NAME:-default}` (unset or empty), `${NAME-default}` (unset), `${NAME:?message}` (error when
 *   unset or empty), `${NAME?message}` (error when unset), `${NAME:+alt}` (alt when set and not
 *   empty), `${NAME+alt}` (alt when set); the default or alternative is interpolated in turn, so
 *   `${A:-${B}}` nests;
 * - `$$` is a literal `$`; a `$` followed by anything else (`a $ b`, `^x$`, `$1`) is kept as it is,
 *   as compose-go does; `${` without its closing `}`, or with no valid name after it (`${}`, `${ a}`,
 *   `${a!}`), is an error;
 * - `${name[key]...}` (compose-go's named mappings, off unless a caller configures them) is kept as
 *   written, as compose-go does without them.
 *
 * Two deliberate differences from compose-go: a default, alternative or message is only evaluated
 * when it is used (compose-go evaluates it eagerly, so `${SET:-${UNSET:?x}}` fails there), so only
 * the variables a value actually needs are warned about or required; and a `:?` message is reported
 * as written, uninterpolated, so no variable's value can reach a message.
 *
 * Only string scalars that are values are rewritten; map keys, numbers, booleans and nulls stay.
 * Messages name variables, never their values (they may be secrets).
 */

export const INTERPOLATION_LIMITS = {
  /** Longest string a value may become once its variables are put in. */
  maxLength: 64 * 1024,
  /**
   * Most characters interpolation may add over the whole tree (counted at every occurrence, aliases
   * included): with 100,000 nodes of 64 KiB each a file could otherwise stand for gigabytes.
   */
  maxGrowth: 4 * 1024 * 1024,
  /** Longest `:?` message quoted in an error. */
  maxMessage: 200,
} as const;

export interface InterpolationResult {
  /** A new tree; the input is not changed. Nodes without strings to rewrite may be shared with it. */
  tree: YamlNode;
  /**
   * Every variable name the tree's values refer to, including those in defaults and alternatives
   * that were not needed (`${A:-$B}` with A set still names B): what the file can be given.
   */
  referenced: Set<string>;
}

type Operator = ':-' | '-' | ':?' | '?' | ':+' | '+';

type Part =
  | { kind: 'text'; text: string }
  | { kind: 'var'; name: string; op: null }
  | { kind: 'var'; name: string; op: Operator; arg: Part[]; raw: string };

class InvalidFormat extends Error {
  constructor(readonly offset: number) {
    super('invalid interpolation format');
  }
}

class TooLong extends Error {}

const NAME_START = /[A-Za-z_]/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

/** Parses `s[start, end)` into parts; throws {@link InvalidFormat} (offset into `s`). */
function parse(s: string, start: number, end: number, names: Set<string>): Part[] {
  const parts: Part[] = [];
  let text = '';
  let i = start;
  while (i < end) {
    const dollar = s.indexOf('$', i);
    if (dollar < 0 || dollar >= end) {
      text += s.slice(i, end);
      break;
    }
    text += s.slice(i, dollar);
    const next = dollar + 1 < end ? s[dollar + 1] : '';
    if (next === '$') {
      text += '$';
      i = dollar + 2;
      continue;
    }
    if (next !== '{' && !NAME_START.test(next)) {
      // compose-go keeps a `$` that starts nothing it knows.
      text += '$';
      i = dollar + 1;
      continue;
    }
    if (text) parts.push({ kind: 'text', text });
    text = '';
    if (next !== '{') {
      const name = NAME.exec(s.slice(dollar + 1, end))![0];
      names.add(name);
      parts.push({ kind: 'var', name, op: null });
      i = dollar + 1 + name.length;
      continue;
    }
    // `${`: the matching `}`, counting the braces opened inside (nested `${...}`).
    let depth = 1;
    let close = dollar + 2;
    for (; close < end; close++) {
      const c = s[close];
      if (c === '{') depth++;
      else if (c === '}' && --depth === 0) break;
    }
    if (close >= end) throw new InvalidFormat(dollar);
    const inner = dollar + 2;
    const name = NAME.exec(s.slice(inner, close))?.[0];
    if (name === undefined) throw new InvalidFormat(dollar);
    let k = inner + name.length;
    if (k === close) {
      names.add(name);
      parts.push({ kind: 'var', name, op: null });
    } else if (s[k] === '[') {
      // A named mapping (`${secret[key]}`): kept as written, as compose-go does without mappings.
      parts.push({ kind: 'text', text: s.slice(dollar, close + 1) });
    } else {
      let op: Operator;
      if (s[k] === ':' && (s[k + 1] === '-' || s[k + 1] === '?' || s[k + 1] === '+')) {
        op = `:${s[k + 1]}` as Operator;
        k += 2;
      } else if (s[k] === '-' || s[k] === '?' || s[k] === '+') {
        op = s[k] as Operator;
        k += 1;
      } else throw new InvalidFormat(dollar);
      names.add(name);
      parts.push({ kind: 'var', name, op, arg: parse(s, k, close, names), raw: s.slice(k, close) });
    }
    i = close + 1;
  }
  if (text) parts.push({ kind: 'text', text });
  return parts;
}

export type InterpolationProblem =
  | { kind: 'unset'; name: string }
  | { kind: 'required'; name: string; message: string }
  | { kind: 'invalid'; offset: number }
  | { kind: 'too_long' };

export interface InterpolationOutcome {
  /** The interpolated string; undefined when a problem other than `unset` was found. */
  value: string | undefined;
  problems: InterpolationProblem[];
}

function evaluate(
  parts: Part[],
  vars: Readonly<Record<string, string>>,
  problems: InterpolationProblem[],
): string {
  let out = '';
  const append = (piece: string): void => {
    if (out.length + piece.length > INTERPOLATION_LIMITS.maxLength) throw new TooLong();
    out += piece;
  };
  for (const part of parts) {
    if (part.kind === 'text') {
      append(part.text);
      continue;
    }
    const set = Object.hasOwn(vars, part.name);
    const value = set ? String(vars[part.name]) : undefined;
    switch (part.op) {
      case null:
        if (value === undefined) {
          if (!problems.some((p) => p.kind === 'unset' && p.name === part.name))
            problems.push({ kind: 'unset', name: part.name });
        } else append(value);
        break;
      case ':-':
        append(value ? value : evaluate(part.arg, vars, problems));
        break;
      case '-':
        append(value ?? evaluate(part.arg, vars, problems));
        break;
      case ':?':
      case '?':
        if (value === undefined || (part.op === ':?' && value === '')) {
          if (!problems.some((p) => p.kind === 'required' && p.name === part.name))
            problems.push({ kind: 'required', name: part.name, message: part.raw });
        } else append(value);
        break;
      case ':+':
        append(value ? evaluate(part.arg, vars, problems) : (value ?? ''));
        break;
      case '+':
        append(value !== undefined ? evaluate(part.arg, vars, problems) : '');
        break;
    }
  }
  return out;
}

/**
 * Interpolates one string. `referenced` receives every variable name it mentions. Exposed for the
 * caller's other strings (an env file's values, say); the tree walk below uses it for every value.
 */
export function interpolateString(
  text: string,
  variables: Readonly<Record<string, string>>,
  referenced: Set<string> = new Set(),
): InterpolationOutcome {
  if (!text.includes('$')) return { value: text, problems: [] };
  let parts: Part[];
  try {
    parts = parse(text, 0, text.length, referenced);
  } catch (err) {
    if (err instanceof InvalidFormat)
      return { value: undefined, problems: [{ kind: 'invalid', offset: err.offset }] };
    throw err;
  }
  const problems: InterpolationProblem[] = [];
  let value: string;
  try {
    value = evaluate(parts, variables, problems);
  } catch (err) {
    if (err instanceof TooLong) return { value: undefined, problems: [...problems, { kind: 'too_long' }] };
    throw err;
  }
  return { value: problems.some((p) => p.kind !== 'unset') ? undefined : value, problems };
}

const join = (path: string, key: string | number): string => (path ? `${path}.${key}` : String(key));

const quoted = (message: string): string =>
  message.length > INTERPOLATION_LIMITS.maxMessage
    ? `${message.slice(0, INTERPOLATION_LIMITS.maxMessage)}…`
    : message;

/**
 * Interpolates every string value of the tree (see the module comment). Problems go to `issues`:
 * an unset variable without a default is a warning (it becomes an empty string), a `:?`/`?`
 * variable without a value is a `missing_required_field` error with the file's message, a bad
 * `${` an `invalid_value` error and a value past {@link INTERPOLATION_LIMITS} a `resource_constraint`
 * error, each at the scalar's path and position. A value with an error keeps its text as written.
 */
export function interpolateTree(
  root: YamlNode,
  variables: Readonly<Record<string, string>>,
  issues: Issues,
): InterpolationResult {
  const referenced = new Set<string>();
  /** Outcomes by source text: an alias repeats a string, and so does many a file. */
  const cache = new Map<string, InterpolationOutcome>();
  let growth = 0;
  let exhausted = false;

  const scalar = (node: YamlScalar, path: string): YamlScalar => {
    if (typeof node.value !== 'string' || !node.value.includes('$')) return node;
    const source = node.value;
    if (exhausted) return node;
    let outcome = cache.get(source);
    if (outcome === undefined) {
      outcome = interpolateString(source, variables, referenced);
      cache.set(source, outcome);
    }
    for (const problem of outcome.problems) {
      switch (problem.kind) {
        case 'unset':
          issues.warn(path, `the variable ${problem.name} is not set: it is an empty string here`, node.pos);
          break;
        case 'required':
          issues.error(
            path,
            'missing_required_field',
            problem.message
              ? `required variable ${problem.name} is missing a value: ${quoted(problem.message)}`
              : `required variable ${problem.name} is missing a value`,
            node.pos,
          );
          break;
        case 'invalid':
          issues.error(
            path,
            'invalid_value',
            `invalid interpolation format at character ${problem.offset + 1} of this value: ` +
              '"${" needs a variable name and a closing "}" (write $$ for a literal $)',
            node.pos,
          );
          break;
        case 'too_long':
          issues.error(
            path,
            'resource_constraint',
            `this value is longer than ${INTERPOLATION_LIMITS.maxLength} characters once its variables are put in`,
            node.pos,
          );
          break;
      }
    }
    const value = outcome.value;
    if (value === undefined || value === source) return node;
    growth += Math.max(0, value.length - source.length);
    if (growth > INTERPOLATION_LIMITS.maxGrowth) {
      exhausted = true;
      issues.error(
        path,
        'resource_constraint',
        `variables make the file more than ${INTERPOLATION_LIMITS.maxGrowth} characters longer; ` +
          'the values from here on are not interpolated',
        node.pos,
      );
      return node;
    }
    return { ...node, value, text: value };
  };

  const walk = (node: YamlNode, path: string): YamlNode => {
    switch (node.kind) {
      case 'scalar':
        return scalar(node, path);
      case 'seq': {
        let changed = false;
        const items = node.items.map((item, i) => {
          const next = walk(item, join(path, i));
          if (next !== item) changed = true;
          return next;
        });
        return changed ? ({ ...node, items } satisfies YamlSeq) : node;
      }
      case 'map': {
        let changed = false;
        const entries = new Map<string, { key: YamlScalar; value: YamlNode }>();
        for (const [key, entry] of node.entries) {
          const value = walk(entry.value, join(path, key));
          if (value !== entry.value) changed = true;
          entries.set(key, value === entry.value ? entry : { key: entry.key, value });
        }
        return changed ? ({ ...node, entries } satisfies YamlMap) : node;
      }
    }
  };

  return { tree: walk(root, ''), referenced };
}
