/**
 * Go's regexp syntax (regexp/syntax with the Perl flags, Go 1.19 as in Prometheus 2.42) parsed
 * into a syntax tree, with Go's errors and fragments: flag groups `(?imsU)` and `(?flags:...)`
 * anywhere, named groups `(?P<name>...)`, repetitions (a `{` that is not a repeat is a literal;
 * counts up to 1000, also as a product of nested counts), nesting and size limits. re2-scan.ts reads
 * the characters. What Go refuses (look-around, back-references, `(?<name>`, `\C`...) is refused
 * with Go's message.
 */
import type { Node } from './re2-ast.js';
import { complement, MAX_CP, PERL } from './re2-classes.js';
import { ch, chars, isDigit, Scanner, type Flags } from './re2-scan.js';

export interface Parsed {
  root: Node;
  /** Capture group names by index ('' unnamed; index 0 is the whole match). */
  names: string[];
}

/** Group nesting the recursive parser allows (Go's own limit, on tree height, is about 1000). */
const MAX_NESTING = 1000;

class Parser extends Scanner {
  private depth = 0;
  readonly names: string[] = [''];

  parse(): Node {
    const root = this.alternation();
    if (this.pos < this.cps.length) this.fail('unexpected )', this.text);
    return root;
  }

  private alternation(): Node {
    const subs = [this.concat()];
    while (this.cps[this.pos] === ch('|')) {
      this.pos++;
      subs.push(this.concat());
    }
    return subs.length === 1 ? subs[0] : { op: 'alternate', subs };
  }

  private concat(): Node {
    const items: Node[] = [];
    // Where the previous token began when it was a repetition operator (Go's lastRepeat).
    let lastRepeat = -1;
    for (;;) {
      const c = this.cps[this.pos];
      if (c === undefined || c === ch('|') || c === ch(')')) break;
      const start = this.pos;
      const counts = c === ch('{') ? this.counts() : null;
      if (c !== ch('*') && c !== ch('+') && c !== ch('?') && counts === null) {
        lastRepeat = -1;
        this.atom(items);
        continue;
      }
      let [min, max] = [c === ch('+') ? 1 : 0, c === ch('?') ? 1 : -1];
      if (counts) {
        [min, max] = counts;
        if (min > 1000 || max > 1000 || (max >= 0 && min > max))
          this.fail('invalid repeat count', this.from(start));
      } else this.pos++;
      const lazy = this.cps[this.pos] === ch('?');
      if (lazy) this.pos++;
      if (lastRepeat >= 0) this.fail('invalid nested repetition operator', this.from(lastRepeat));
      if (items.length === 0) this.fail('missing argument to repetition operator', this.from(start));
      const sub = items.pop()!;
      const node: Node = { op: 'repeat', sub, min, max, greedy: lazy === this.flags.U, counted: !!counts };
      if (counts && (min >= 2 || max >= 2) && !repeatIsValid(node, 1000))
        this.fail('invalid repeat count', this.from(start));
      items.push(node);
      lastRepeat = start;
    }
    return items.length === 0
      ? { op: 'empty' }
      : items.length === 1
        ? items[0]
        : { op: 'concat', subs: items };
  }

  /** `{n}`, `{n,}` or `{n,m}` at pos (advanced past it); null when the `{` is a literal. */
  private counts(): [number, number] | null {
    let p = this.pos + 1;
    const int = (): number | null => {
      const s = p;
      // Go's parseInt: digits without a leading zero.
      if (!isDigit(this.cps[p]) || (this.cps[p] === ch('0') && isDigit(this.cps[p + 1]))) return null;
      while (isDigit(this.cps[p])) p++;
      return Number(this.from(s, p));
    };
    const min = int();
    if (min === null) return null;
    let max = min;
    if (this.cps[p] === ch(',')) {
      p++;
      if (this.cps[p] === ch('}')) max = -1;
      else {
        const m = int();
        if (m === null) return null;
        max = m;
      }
    }
    if (this.cps[p] !== ch('}')) return null;
    this.pos = p + 1;
    return [min, max];
  }

  private atom(items: Node[]): void {
    const c = this.cps[this.pos];
    if (c === ch('(')) {
      const group = this.group();
      if (group) items.push(group);
    } else if (c === ch('[')) items.push(this.charClass());
    else if (c === ch('\\')) this.backslash(items);
    else {
      this.pos++;
      if (c === ch('^')) items.push({ op: 'assert', kind: this.flags.m ? 'beginLine' : 'beginText' });
      else if (c === ch('$')) items.push({ op: 'assert', kind: this.flags.m ? 'endLine' : 'endText' });
      else if (c === ch('.')) items.push(chars(this.flags.s ? [[0, MAX_CP]] : complement([[10, 10]])));
      else items.push(this.literal(c));
    }
  }

  /** After '(': a group, or null for a flag setting such as `(?i)`. */
  private group(): Node | null {
    const start = this.pos;
    const saved = this.flags;
    let name: string | undefined;
    if (this.cps[start + 1] === ch('?')) {
      if (this.cps[start + 2] === ch('P') && this.cps[start + 3] === ch('<') && start + 4 < this.cps.length) {
        const end = this.cps.indexOf(ch('>'), start);
        if (end < 0) this.fail('invalid named capture', this.from(start, this.cps.length));
        name = this.from(start + 4, end);
        if (!/^[A-Za-z0-9_]+$/.test(name)) this.fail('invalid named capture', this.from(start, end + 1));
        this.pos = end + 1;
      } else {
        const [flags, close] = this.flagSetting(start);
        if (close === ')') {
          this.flags = flags;
          return null;
        }
        this.flags = flags;
      }
    } else {
      name = '';
      this.pos++;
    }
    const index = name === undefined ? 0 : this.names.push(name) - 1;
    if (++this.depth > MAX_NESTING) this.fail('expression nests too deeply', this.text);
    const sub = this.alternation();
    this.depth--;
    if (this.cps[this.pos] !== ch(')')) this.fail('missing closing )', this.text);
    this.pos++;
    this.flags = saved;
    return name === undefined ? sub : { op: 'capture', sub, index, name };
  }

  /** `(?flags)` or `(?flags:` at start: the flags and the closing character; pos moves past it. */
  private flagSetting(start: number): [Flags, string] {
    const flags = { ...this.flags };
    let on = true;
    let sawFlag = false;
    let p = start + 2;
    while (p < this.cps.length) {
      const c = String.fromCodePoint(this.cps[p++]);
      if (c === 'i' || c === 'm' || c === 's' || c === 'U') {
        flags[c] = on;
        sawFlag = true;
      } else if (c === '-' && on) {
        on = false;
        sawFlag = false;
      } else if ((c === ':' || c === ')') && (on || sawFlag)) {
        this.pos = p;
        return [flags, c];
      } else break;
    }
    this.pos = p;
    return this.fail('invalid or unsupported Perl syntax', this.from(start, p));
  }

  private backslash(items: Node[]): void {
    const next = this.cps[this.pos + 1];
    const assertion = { A: 'beginText', z: 'endText', b: 'wordBoundary', B: 'noWordBoundary' } as const;
    const c = next === undefined ? '' : String.fromCodePoint(next);
    if (c in assertion) {
      this.pos += 2;
      items.push({ op: 'assert', kind: assertion[c as keyof typeof assertion] });
    } else if (c === 'C') this.fail('invalid escape sequence', '\\C');
    else if (c === 'Q') {
      let end = this.pos + 2;
      while (end < this.cps.length && !(this.cps[end] === ch('\\') && this.cps[end + 1] === ch('E'))) end++;
      for (let k = this.pos + 2; k < end; k++) items.push(this.literal(this.cps[k]));
      this.pos = Math.min(end + 2, this.cps.length);
    } else if (c === 'p' || c === 'P') items.push({ op: 'char', set: this.unicodeClass() });
    else if (c.toLowerCase() in PERL) items.push(chars(this.perlClass()));
    else items.push(this.literal(this.escape()));
  }
}

/** Go's repeatIsValid: nested counted repeats multiply to at most n copies. */
function repeatIsValid(node: Node, n: number): boolean {
  if (node.op === 'repeat' && node.counted) {
    const m = node.max < 0 ? node.min : node.max;
    if (node.max === 0) return true;
    if (m > n) return false;
    if (m > 0) n = Math.trunc(n / m);
  }
  if (node.op === 'repeat' || node.op === 'capture') return repeatIsValid(node.sub, n);
  if (node.op === 'concat' || node.op === 'alternate') return node.subs.every((s) => repeatIsValid(s, n));
  return true;
}

/** Go's parse-time limits (checkHeight, checkSize): a tree over 1000 high, a program too large. */
function checkLimits(parser: Parser, root: Node, text: string): void {
  let nodes = 0;
  const height = (node: Node): number => {
    nodes++;
    if (node.op === 'repeat' || node.op === 'capture') return 1 + height(node.sub);
    if (node.op !== 'concat' && node.op !== 'alternate') return 1;
    // Go flattens a concatenation of concatenations (and alternations alike).
    const flat = (n: Node): Node[] => (n.op === node.op ? n.subs.flatMap(flat) : [n]);
    return 1 + flat(node).reduce((h, s) => Math.max(h, height(s)), 0);
  };
  if (height(root) > 1000 && nodes >= 1000) parser.fail('expression nests too deeply', text);
  if (programSize(root) > (128 << 20) / 40) parser.fail('regexp/syntax: internal error', text);
}

/** Go's calcSize: the instructions the tree compiles to. */
export function programSize(node: Node): number {
  switch (node.op) {
    case 'capture':
      return 2 + programSize(node.sub);
    case 'concat':
      return node.subs.reduce((n, s) => n + programSize(s), 0);
    case 'alternate':
      return node.subs.reduce((n, s) => n + programSize(s), node.subs.length - 1);
    case 'repeat': {
      const sub = programSize(node.sub);
      if (node.max === -1) return node.min === 0 ? 2 + sub : 1 + Math.max(node.min, 1) * sub;
      if (!node.counted) return 1 + sub;
      return Math.max(1, node.max * sub + (node.max - node.min));
    }
    case 'char':
    case 'assert':
    case 'empty':
      return 1;
  }
}

/**
 * A PromQL regex matcher value parsed as Prometheus compiles it: `^(?:value)$`, and the value alone
 * must parse too. The wrapped form's errors come first (an unclosed `\Q` or a trailing backslash
 * swallows the wrapper's `)` and is reported as a missing one). Throws MetricInputError.
 */
export function parseRe2(pattern: string): Parsed {
  const wrappedText = `^(?:${pattern})$`;
  const wrapped = new Parser(wrappedText);
  const root = wrapped.parse();
  checkLimits(wrapped, root, wrappedText);
  new Parser(pattern).parse();
  return { root, names: wrapped.names };
}
