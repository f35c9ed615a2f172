/**
 * The character sets of Go's regexp syntax (re2-parse.ts) as code point ranges: POSIX and Perl
 * classes (ASCII, as in Go), Unicode classes by Go 1.19's names, and case folding by simple
 * folding orbits (what `(?i)` adds), computed once from the JS engine's own `iu` equivalence.
 */

export type Range = [number, number];
export const MAX_CP = 0x10ffff;

/** Sorted, merged, abutting ranges joined. */
export function normalize(list: readonly Range[]): Range[] {
  const sorted = [...list].sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const out: Range[] = [];
  for (const [lo, hi] of sorted) {
    const last = out[out.length - 1];
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi);
    else out.push([lo, hi]);
  }
  return out;
}

export function complement(list: readonly Range[]): Range[] {
  const out: Range[] = [];
  let next = 0;
  for (const [lo, hi] of normalize(list)) {
    if (lo > next) out.push([next, lo - 1]);
    next = Math.max(next, hi + 1);
  }
  if (next <= MAX_CP) out.push([next, MAX_CP]);
  return out;
}

/** Whether two normalized lists share a code point. */
export function intersects(a: readonly Range[], b: readonly Range[]): boolean {
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i][1] < b[j][0]) i++;
    else if (b[j][1] < a[i][0]) j++;
    else return true;
  }
  return false;
}

/** Binary search in a normalized list. */
export function inRanges(list: readonly Range[], cp: number): boolean {
  let lo = 0;
  let hi = list.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (cp < list[mid][0]) hi = mid - 1;
    else if (cp > list[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/** Ranges from a spec like "0-9A-Za-z_" (a '-' between two characters makes a range). */
function ranges(spec: string): Range[] {
  const cps = Array.from(spec, (c) => c.codePointAt(0)!);
  const out: Range[] = [];
  for (let i = 0; i < cps.length; i++) {
    if (cps[i + 1] === 0x2d && i + 2 < cps.length) {
      out.push([cps[i], cps[i + 2]]);
      i += 2;
    } else out.push([cps[i], cps[i]]);
  }
  return out;
}

/** `[:name:]` inside a class, ASCII only as in Go. */
export const POSIX: Readonly<Record<string, Range[]>> = {
  alnum: ranges('0-9A-Za-z'),
  alpha: ranges('A-Za-z'),
  ascii: ranges('\x00-\x7f'),
  blank: ranges('\t '),
  cntrl: ranges('\x00-\x1f\x7f'),
  digit: ranges('0-9'),
  graph: ranges('!-~'),
  lower: ranges('a-z'),
  print: ranges(' -~'),
  punct: ranges('!-/:-@[-`{-~'),
  space: ranges('\t-\r '),
  upper: ranges('A-Z'),
  word: ranges('0-9A-Za-z_'),
  xdigit: ranges('0-9A-Fa-f'),
};

/** `\d \s \w` as Go defines them: ASCII only, and \s without \v. */
export const PERL: Readonly<Record<string, Range[]>> = {
  d: POSIX.digit,
  s: ranges('\t\n\f\r '),
  w: POSIX.word,
};

/** Single-letter escapes of control characters. */
export const ESCAPED: Readonly<Record<string, number>> = { a: 7, f: 12, t: 9, n: 10, r: 13, v: 11 };

/** unicode.Categories in Go 1.19 (no LC, no Cn); JS writes them `\p{Lu}`. */
const CATEGORIES = /^(?:[CLMNPSZ]|C[cfos]|L[lmotu]|M[cen]|N[dlo]|P[cdefios]|S[ckmo]|Z[lps])$/;

/** unicode.Scripts in Go 1.19 (Unicode 13.0); JS accepts newer scripts and aliases, Go does not. */
const SCRIPTS = new Set(
  `Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali
  Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian
  Chakma Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot Cyrillic Deseret Devanagari
  Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic
  Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew
  Hiragana Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi
  Kannada Katakana Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha
  Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen
  Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao
  Modi Mongolian Mro Multani Myanmar Nabataean Nandinagari New_Tai_Lue Newa Nko Nushu
  Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic
  Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Oriya Osage Osmanya Pahawh_Hmong Palmyrene
  Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian
  Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog
  Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta
  Ugaritic Vai Wancho Warang_Citi Yezidi Yi Zanabazar_Square`.split(/\s+/),
);

export const SCRIPT_NAMES: ReadonlySet<string> = SCRIPTS;

/** The JS property (`\p{...}` body) for a Go Unicode class name, or undefined for an unknown one. */
export function unicodeProperty(name: string): string | undefined {
  if (name === 'Any' || CATEGORIES.test(name)) return name;
  return SCRIPTS.has(name) ? `Script=${name}` : undefined;
}

/** Go folds code points in [0x41, 0x1e943] only (regexp/syntax minFold, maxFold). */
const MIN_FOLD = 0x41;
const MAX_FOLD = 0x1e943;

/** Each code point with case variants → its whole orbit, sorted. Built on first use. */
let orbits: Map<number, number[]> | undefined;
let foldable: number[] = [];

/**
 * Orbits of simple case folding: a code point is joined to its one-code-point upper and lower
 * case when the engine's own `iu` matching agrees they are equal (which leaves out ı/I and the
 * like, as Go's unicode.SimpleFold does), then closed transitively (k, K and the Kelvin sign).
 */
function foldOrbits(): Map<number, number[]> {
  if (orbits) return orbits;
  const parent = new Map<number, number>();
  const find = (x: number): number => {
    let root = x;
    while (parent.has(root) && parent.get(root) !== root) root = parent.get(root)!;
    parent.set(x, root);
    return root;
  };
  for (let cp = MIN_FOLD; cp <= MAX_FOLD; cp++) {
    const c = String.fromCodePoint(cp);
    for (const other of [c.toLowerCase(), c.toUpperCase()]) {
      const o = other.codePointAt(0)!;
      if (other === c || other.length !== String.fromCodePoint(o).length) continue;
      if (!new RegExp(`^\\u{${cp.toString(16)}}$`, 'iu').test(other)) continue;
      parent.set(find(o), find(cp));
    }
  }
  const groups = new Map<number, number[]>();
  for (const cp of parent.keys()) {
    const root = find(cp);
    if (!groups.has(root)) groups.set(root, []);
    groups.get(root)!.push(cp);
  }
  orbits = new Map();
  for (const members of groups.values()) {
    members.sort((a, b) => a - b);
    for (const cp of members) orbits.set(cp, members);
  }
  foldable = [...orbits.keys()].sort((a, b) => a - b);
  return orbits;
}

/** A code point and its case variants. */
export function foldOrbit(cp: number): readonly number[] {
  return foldOrbits().get(cp) ?? [cp];
}

/** The ranges closed under case folding (Go's appendFoldedRange over each range). */
export function foldRanges(list: readonly Range[]): Range[] {
  const map = foldOrbits();
  const norm = normalize(list);
  const extra: Range[] = [];
  for (const cp of foldable) if (inRanges(norm, cp)) for (const o of map.get(cp)!) extra.push([o, o]);
  return extra.length === 0 ? norm : normalize([...norm, ...extra]);
}

const propertyExtras = new Map<string, Range[]>();

/** What folding adds to a Unicode property (Go's FoldCategory / FoldScript tables). */
export function propertyFoldExtra(property: string): Range[] {
  let extra = propertyExtras.get(property);
  if (extra === undefined) {
    const map = foldOrbits();
    const re = new RegExp(`^\\p{${property}}$`, 'u');
    const found: Range[] = [];
    for (const cp of foldable)
      if (re.test(String.fromCodePoint(cp)))
        for (const o of map.get(cp)!) if (!re.test(String.fromCodePoint(o))) found.push([o, o]);
    extra = normalize(found);
    propertyExtras.set(property, extra);
  }
  return extra;
}

/** A code point as a JS `u`-mode escape: valid inside and outside classes, whatever it is. */
export const hex = (cp: number): string => `\\u{${cp.toString(16)}}`;

export const emitRanges = (list: readonly Range[]): string =>
  list.map(([lo, hi]) => (lo === hi ? hex(lo) : `${hex(lo)}-${hex(hi)}`)).join('');
