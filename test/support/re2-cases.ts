/**
 * Regular expressions and label values for src/server/metric-store/re2.spec.ts, which runs each
 * through Prometheus 2.42 (promtool) and through ours. Gathered from the storage and engine
 * helpers' specs and the differential corpus, plus Go's corner cases, and random ones.
 */
import type { Random } from './random.js';

/** Label values every pattern is tried on: case and case folding, Unicode, newlines, metacharacters. */
export const VALUES = [
  ...['', 'a', 'b', 'aa', 'ab', 'aab', 'abc', 'ABC', 'Abc', 'foo', 'foobar', 'barfoo', 'a.b', 'a-b', 'a b'],
  ...['a\nb', 'a\rb', 'a\tb', 'a\vb', 'a\fb', '\n', 'a\n', '0', '123', 'a1_', '_', 'k', 'K', '\u212a', 'ſ'],
  ...['s', 'S', 'é', 'É', 'µ', 'Ω', 'ω', '😀', 'x😀y', '{', '}', '{}', 'a{2}', 'a{,2}', '\\', '[', ']', '$'],
  ...[
    '^',
    '-',
    '\u2028',
    '\u00a0',
    '\u0007',
    'a\u0000b',
    'αβγ',
    '日本',
    'a.b.c',
    '10.0.0.1:9100',
    'api-7f9c',
  ],
  ...['x|y', 'ß', 'ẞ', 'ǅ', 'Ǆ', 'ǆ', 'Σ', 'σ', 'ς', 'ı', 'I', 'i', 'İ', 'web-01.example.com', '/var/log/x'],
  // Exponential for a backtracking engine on `(a+)+`, `(a|aa)+`, `(.*a){12}`: linear here too.
  'a'.repeat(40) + 'b',
];

/** Go-valid patterns and Go syntax errors (the merged cases of both former translators). */
export const PATTERNS = [
  ...['', '.*', '.+', '.', '..', 'a', 'a|b', 'a|', 'abc|foo', 'foo.*', '.*foo', '.*o.*', 'a.b', 'a\\.b'],
  ...['(?i)abc', '(?i)k', '(?i)s', '(?i)é', '(?i)[a-z]+', '(?i)ω', '(?i)\\w+', '(?i)[^a-z]', '(?i)(?i)a'],
  ...[
    '(?i)σ',
    '(?i)ß',
    '(?i)ǅ',
    '(?i)i',
    '(?i)ı',
    '(?i)[k-l]',
    '(?i)\\W',
    '(?i)[[:upper:]]',
    '(?i)[[:^lower:]]',
  ],
  ...['(?s)a.b', '(?s:a.b)', 'a(?s:.)b', '(?s).*', '(?m)^a$', '(?m)a$\\n?b?', '(?ms).+', '(?m)a$\\n^b'],
  ...['(?m:^)a', '\\d+', '\\D', '\\s', '\\S+', '\\w+', '\\W', '[\\d]+', '[\\D]', '[\\s]', '[\\S]+', '[^\\w]'],
  ...['[\\W]', '[[:alpha:]]+', '[[:^alpha:]]', '[[:punct:]]', '[[:space:]]', '[[:word:][:space:]]+'],
  ...[
    '[[:xdigit:]]+',
    '[^a]',
    '[]a]',
    '[^]a]',
    '[a-]',
    '[-a]',
    '[a\\-z]+',
    '[\\]\\[]',
    '[.]',
    '[{}]+',
    '[\\^$]',
  ],
  ...['[a-c]+', '[\\d-z]+', '\\pL', '\\pL+', '\\p{Greek}+', '\\PL', '\\p{^L}', '[\\p{Lu}]', '[^\\p{L}]'],
  ...['\\p{Han}+', '\\pN+', '(?i)\\p{Lu}', '(?i)\\P{Lu}', '(?i)[^\\p{Lu}]', '(?i)\\p{Greek}', '[\\PL\\d]+'],
  ...[
    '[^\\PL]',
    '\\p{Any}',
    '\\P{^Greek}',
    '\\x61',
    '\\x{1F600}',
    'x\\x{1f600}y',
    '\\x{0041}',
    '\\141',
    '\\0',
  ],
  ...[
    'a\\000b',
    '\\a',
    '\\f',
    '\\v',
    '\\t',
    '\\r',
    '\\08',
    '\\Qa.b\\E',
    '\\Q{}\\E',
    'a\\Q',
    '\\Q.*',
    'a\\Q\\E*',
  ],
  ...[
    '\\Qab\\E+',
    'a{2}',
    'a{,2}',
    '{',
    '}',
    '{}',
    'a{2,}',
    'a{1,2}b',
    'a{0}',
    '\\{\\}',
    'a{2}?',
    'a*?',
    'a+?b',
  ],
  ...['a??', 'a{01}', 'a{0,1}', 'x{2}{,3}', '\\$', '\\^', '^a', 'a$', '^', '$', '^*a', 'a$*', '\\Aa\\z'],
  ...[
    '\\bfoo',
    'foo\\b',
    'a\\Bb',
    '\\b',
    '\\z+',
    '(?P<n>a)b',
    '(a)(b)c?',
    '(?:a|b)+',
    '(a|b|c)*',
    '()',
    '(|a)',
  ],
  ...['x\\|y', '\\-', '\\_', '(?P<n>a)(?P<n>b)', '(?P<1>a)', '(?)', '(?:)', '(?i:)', '(?U)', '(?i-i)a'],
  ...['10\\.0\\.0\\.\\d+:9100', 'api-[0-9a-f]+', '(foo|bar)baz?', 'µ|Ω', '日.', 'web-\\d+\\..*', '/var/.*'],
  // Flags anywhere and scoped, which only the engine's translator had; Go runs each as written.
  ...['a(?i)b', '(?i:a)b', '(?i)(?-i)a', 'a(?i)*', '(?i)a|b', 'A(?i:b|c)D', '(?i)A(?-i:b)C', '(?m-s:a)'],
  ...['(?U)a*', '(?U)a+?', '(?s-i:a)(?s-i)', '(?i)(?s).'],
  // `[.*]literal[.*]`, which is answered by string search.
  ...[
    '.*foo.*',
    '.*a.*',
    '(?s).*a.*',
    '(?s).*a',
    'a(?s).*',
    '.*\\n',
    '\\n.*',
    '(?s).*\\n.*',
    '.*?b',
    '.*b\\nb.*',
  ],
  ...['(?s).*b.*', '.*b(?s).*', '(?s).*b(?-s).*', '.*\\.b'],
  // Exponential or polynomial for a backtracking engine; RE2 accepts them.
  ...[
    '(a+)+',
    '(a{1,3})*',
    '(.*x)+$',
    '(a|aa)+',
    '(a*)*b',
    '(a|a)*b',
    '(.*a){12}',
    '(\\w|\\d)+!',
    '(?:a?){20}a{20}',
  ],
  // Go syntax errors.
  ...[
    '(',
    ')',
    'a)',
    '*a',
    '+',
    'a**',
    'a+*',
    'a*?*',
    'a{1001}',
    'a{2,1}',
    '[z-a]',
    '[a',
    '[]',
    '\\C',
    '\\1',
  ],
  ...[
    '\\8',
    '(?<n>a)',
    '(?=a)',
    '(?!a)',
    '(?<=a)',
    '(?P<>a)',
    '(?P<a-b>x)',
    '(?P<n',
    '(?P<n>',
    '(?P=n)',
    '(?#c)',
  ],
  ...[
    '\\',
    '[[:foo:]]',
    '[[:Alpha:]]',
    '[[:foo bar:]]',
    '[a-\\d]',
    '(?i)*',
    '\\p{Foo}',
    '\\p{Latn}',
    '\\p{greek}',
  ],
  ...[
    '\\p{LC}',
    '\\p{Cn}',
    '\\p{ASCII}',
    '\\p{Vithkuqi}',
    '\\p',
    '\\pX',
    '[\\p]',
    '\\p{Greek',
    '\\x{110000}',
  ],
  ...[
    '\\xZ',
    '\\x{}',
    '\\x{12',
    'x{2}{3}',
    '(?i',
    '(?z)',
    '(?i-)',
    '(?-)',
    '(?i)(?-i)(?-',
    '\\é',
    '\\G',
    '\\Z',
  ],
  ...['a{100000000}', '(a{10}){101}', '((a{10}){10}){11}', 'a)(b', '\\Q\\', '(?:a{1000}){2}'],
];

/** Patterns whose capture groups are checked through label_replace (`${1}|${2}|${3}`, `${n}`). */
export const CAPTURE_PATTERNS = [
  ...[
    '(a+)+',
    '(a|ab)(c|bcd)(d*)',
    '(?:(a)|b)*',
    '(a*)*',
    '(a*)+',
    '(|a)*',
    '(|a)+',
    '(a|)*',
    '(?U)(a+)(a*)',
  ],
  ...['(a+?)(a*)', '(.*)(\\d+)', '(.*?)(\\d+)', '((a)|b)+', '(a)|(b)', '(?P<n>a)(?P<n>b)?', '(?i)(A)(b)'],
  ...['(x)?(y)?', '(a{2,3})(a*)', '(a{2,3}?)(a*)', '((?:a|b)*?)(b*)', '(\\w+)\\W(\\w+)', '(.)(.)(.)?'],
  ...['(a?){3}', '(a??){2}(a*)', '(?s)(.*)\\n(.*)', '(?m)(^a$)\\n(b)', '(?P<n>x)|(?P<n>y)', '(a|b)*(b)'],
  ...['(?i)(W)EB(?-i)-01.*', '((?i)W)eb.*', '[^.]+\\.(?P<n>.*)', '(\\d+|v\\d+)(?:\\..*)?', '(?:(a)|(b))+'],
  ...['(a*)+$', '(a*?)*', '((a)|(b))*c?', '(?:(a)|b)*?b'],
];

export const CAPTURE_VALUES = ['', 'a', 'aa', 'aaa', 'ab', 'abcd', 'abab', 'b', 'ba', 'xy', 'y', 'foo123'];
CAPTURE_VALUES.push('a\nb', 'ab cd', 'aaab', 'web-01.example.com', 'v1.22.3', '12.5', 'bab', 'abc');

/**
 * A random Go regular expression over a few characters (so that matches are frequent): nested
 * groups of every kind, flags, classes, anchors and every repetition, greedy and not.
 */
export function randomPattern(r: Random, depth = 0): string {
  const branches = r.int(1, depth > 1 ? 1 : 3);
  const out: string[] = [];
  for (let b = 0; b < branches; b++) {
    let concat = '';
    for (let i = r.int(depth === 0 ? 1 : 0, 3); i > 0; i--) concat += randomItem(r, depth);
    out.push(concat);
  }
  return out.join('|');
}

const ATOMS = [
  'a',
  'b',
  'A',
  'k',
  'é',
  '\\.',
  '.',
  '-',
  '\\n',
  '[ab]',
  '[^a]',
  '[a-b]',
  '[^\\pL]',
  '\\d',
  '\\w',
  '\\s',
  '\\W',
];
const MORE = ['[[:alpha:]]', '\\pL', '\\PL', '^', '$', '\\b', '\\B', '(?i)', '(?s)', '(?U)', '(?m)', '(?-i)'];
const QUANTIFIERS = ['*', '+', '?', '{2}', '{1,2}', '{0,}', '{2,}'];

function randomItem(r: Random, depth: number): string {
  let atom: string;
  const kind = r.int(0, 9);
  if (kind < 5 || depth > 2) atom = r.pick(ATOMS);
  else if (kind < 7) atom = r.pick(MORE);
  else {
    const open = r.pick(['(', '(', '(?:', '(?i:', '(?s:', '(?P<n>', '(?U:']);
    atom = `${open}${randomPattern(r, depth + 1)})`;
  }
  if (atom.startsWith('(?') && atom.endsWith(')') && !atom.includes(':') && atom.length <= 5) return atom;
  if (r.next() < 0.4) atom += r.pick(QUANTIFIERS) + (r.next() < 0.3 ? '?' : '');
  return atom;
}

/** A short random value over the patterns' characters. */
export function randomValue(r: Random): string {
  let v = '';
  for (let i = r.int(0, 7); i > 0; i--)
    v += r.pick(['a', 'a', 'b', 'A', 'B', '.', '-', '\n', '1', ' ', 'K', '\u212a', 'É']);
  return v;
}
