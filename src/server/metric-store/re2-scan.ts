/**
 * The character level of Go's regexp syntax, for re2-parse.ts: the text as code points (with
 * UTF-16 offsets, so errors quote Go's fragments), literals folded under (?i), escapes (Go's
 * parseEscape: octal, `\x{...}`, `\a`...), Perl classes, Unicode classes by Go 1.19's names, and
 * bracket classes (Go's parseClass with ClassNL: a negated class matches \n).
 */
import { MetricInputError } from './errors.js';
import type { CharSet, Node, Property } from './re2-ast.js';
import {
  complement,
  ESCAPED,
  foldOrbit,
  foldRanges,
  MAX_CP,
  normalize,
  PERL,
  POSIX,
  propertyFoldExtra,
  unicodeProperty,
  type Range,
} from './re2-classes.js';

/** The flags `(?imsU)` set: case folding, multi-line `^`/`$`, `.` matching \n, ungreedy. */
export interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  U: boolean;
}

export const ch = (c: string): number => c.charCodeAt(0);
export const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
const isOctal = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x37;
const isAlnum = (c: number): boolean => c < 0x80 && /[0-9A-Za-z]/.test(String.fromCharCode(c));
const unhex = (c: number | undefined): number =>
  c === undefined || !/[0-9A-Fa-f]/.test(String.fromCharCode(c)) ? -1 : parseInt(String.fromCharCode(c), 16);

/** A node consuming one code point of `ranges`. */
export function chars(ranges: Range[]): Node {
  return { op: 'char', set: { ranges: normalize(ranges), properties: [], negate: false } };
}

export class Scanner {
  protected readonly cps: number[] = [];
  /** UTF-16 offset of each code point, and the length at the end: fragments slice the text. */
  protected readonly offsets: number[] = [];
  protected pos = 0;
  protected flags: Flags = { i: false, m: false, s: false, U: false };

  constructor(protected readonly text: string) {
    for (let i = 0; i < text.length;) {
      const cp = text.codePointAt(i)!;
      if (cp >= 0xd800 && cp <= 0xdfff) this.fail('invalid UTF-8', text.slice(i));
      this.offsets.push(i);
      this.cps.push(cp);
      i += cp > 0xffff ? 2 : 1;
    }
    this.offsets.push(text.length);
  }

  fail(code: string, fragment: string): never {
    throw new MetricInputError(`error parsing regexp: ${code}: \`${fragment}\``);
  }

  protected from(start: number, end = this.pos): string {
    return this.text.slice(this.offsets[start], this.offsets[Math.min(end, this.cps.length)]);
  }

  protected literal(cp: number): Node {
    return chars(this.flags.i ? foldOrbit(cp).map((c): Range => [c, c]) : [[cp, cp]]);
  }

  /** `\d \D \s \S \w \W` at pos, folded under (?i) as Go does. */
  protected perlClass(): Range[] {
    const c = String.fromCodePoint(this.cps[this.pos + 1]);
    this.pos += 2;
    return this.appendGroup(PERL[c.toLowerCase()], c !== c.toLowerCase());
  }

  /** Go's appendGroup: the class, folded under (?i), then negated. */
  protected appendGroup(set: Range[], negate: boolean): Range[] {
    const folded = this.flags.i ? foldRanges(set) : set;
    return negate ? complement(folded) : folded;
  }

  /** `\pL`, `\p{Greek}`, `\P{...}`, `\p{^...}` at pos. */
  protected unicodeClass(): CharSet {
    const start = this.pos;
    let negate = this.cps[start + 1] === ch('P');
    let name: string;
    let seqEnd: number;
    if (this.cps[start + 2] === ch('{')) {
      const end = this.cps.indexOf(ch('}'), start);
      if (end < 0) this.fail('invalid character class range', this.from(start, this.cps.length));
      name = this.from(start + 3, end);
      seqEnd = end + 1;
    } else {
      seqEnd = Math.min(start + 3, this.cps.length);
      name = this.from(start + 2, seqEnd);
    }
    if (name.startsWith('^')) [negate, name] = [!negate, name.slice(1)];
    const property = unicodeProperty(name);
    if (property === undefined) this.fail('invalid character class range', this.from(start, seqEnd));
    this.pos = seqEnd;
    if (property === 'Any') return { ranges: negate ? [] : [[0, MAX_CP]], properties: [], negate: false };
    const extra = this.flags.i ? propertyFoldExtra(property) : [];
    const p: Property = { name: property, extra, negate };
    return { ranges: [], properties: [p], negate: false };
  }

  /** After '[': the class (Go's parseClass with ClassNL: a negated class matches \n). */
  protected charClass(): Node {
    const start = this.pos++;
    const negate = this.cps[this.pos] === ch('^');
    if (negate) this.pos++;
    const ranges: Range[] = [];
    const properties: Property[] = [];
    for (let first = true; first || this.cps[this.pos] !== ch(']'); first = false) {
      const c = this.cps[this.pos];
      if (c === ch('[') && this.cps[this.pos + 1] === ch(':') && this.pos + 2 < this.cps.length) {
        let close = this.pos + 2;
        while (
          close + 1 < this.cps.length &&
          !(this.cps[close] === ch(':') && this.cps[close + 1] === ch(']'))
        )
          close++;
        if (close + 1 < this.cps.length) {
          const text = this.from(this.pos, close + 2);
          const m = /^\[:(\^?)([a-z]+):\]$/.exec(text);
          if (!m || !Object.hasOwn(POSIX, m[2])) this.fail('invalid character class range', text);
          ranges.push(...this.appendGroup(POSIX[m[2]], m[1] === '^'));
          this.pos = close + 2;
          continue;
        }
      }
      const next = this.cps[this.pos + 1];
      if (c === ch('\\') && (next === ch('p') || next === ch('P'))) {
        const set = this.unicodeClass();
        ranges.push(...set.ranges);
        properties.push(...set.properties);
        continue;
      }
      if (c === ch('\\') && next !== undefined && String.fromCodePoint(next).toLowerCase() in PERL) {
        ranges.push(...this.perlClass());
        continue;
      }
      const rangeStart = this.pos;
      const lo = this.classChar(start);
      let hi = lo;
      if (
        this.cps[this.pos] === ch('-') &&
        this.pos + 1 < this.cps.length &&
        this.cps[this.pos + 1] !== ch(']')
      ) {
        this.pos++;
        hi = this.classChar(start);
        if (hi < lo) this.fail('invalid character class range', this.from(rangeStart));
      }
      ranges.push(...(this.flags.i ? foldRanges([[lo, hi]]) : [[lo, hi] as Range]));
    }
    this.pos++;
    return { op: 'char', set: { ranges: normalize(ranges), properties, negate } };
  }

  protected classChar(classStart: number): number {
    if (this.pos >= this.cps.length) this.fail('missing closing ]', this.from(classStart, this.cps.length));
    return this.cps[this.pos] === ch('\\') ? this.escape() : this.cps[this.pos++];
  }

  /** Go's parseEscape at a backslash: the code point it stands for. */
  protected escape(): number {
    const start = this.pos++;
    if (this.pos >= this.cps.length) this.fail('trailing backslash at end of expression', '');
    const c = this.cps[this.pos++];
    const bad = (): never => this.fail('invalid escape sequence', this.from(start));
    if (c < 0x80 && !isAlnum(c)) return c;
    // A lone non-zero digit would be a back-reference, which RE2 lacks.
    if (isOctal(c) && (c === ch('0') || isOctal(this.cps[this.pos]))) {
      let r = c - 0x30;
      for (let i = 1; i < 3 && isOctal(this.cps[this.pos]); i++) r = r * 8 + this.cps[this.pos++] - 0x30;
      return r;
    }
    if (c === ch('x')) {
      if (this.pos >= this.cps.length) bad();
      const d = this.cps[this.pos++];
      if (d !== ch('{')) {
        const y = unhex(this.cps[this.pos]);
        if (this.pos < this.cps.length) this.pos++;
        return unhex(d) < 0 || y < 0 ? bad() : unhex(d) * 16 + y;
      }
      let r = 0;
      let digits = 0;
      for (;;) {
        if (this.pos >= this.cps.length) bad();
        const e = this.cps[this.pos++];
        if (e === ch('}')) break;
        if (unhex(e) < 0 || (r = r * 16 + unhex(e)) > MAX_CP) bad();
        digits++;
      }
      return digits === 0 ? bad() : r;
    }
    const letter = String.fromCodePoint(c);
    return letter in ESCAPED ? ESCAPED[letter] : bad();
  }
}
