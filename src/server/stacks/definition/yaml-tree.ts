import {
  EVENT_ID,
  NOT_RESOLVED,
  SCALAR_STYLE,
  YAMLException,
  boolCoreTag,
  floatCoreTag,
  getScalarValue,
  intCoreTag,
  nullCoreTag,
  parseEvents,
  strTag,
  type Event,
  type ScalarEvent,
  type ScalarTagDefinition,
} from 'js-yaml';

/**
 * A YAML reader for untrusted stack definitions that keeps every node's source position.
 *
 * js-yaml 5's `load` returns plain values without positions (there is no `listener` option any
 * more), but its `parseEvents` returns a flat event stream whose events carry source offsets. This
 * module composes that stream into a small tree of its own: the YAML 1.2 core schema for plain
 * scalars, only the standard tags, duplicate keys refused, and aliases bounded by what they expand to.
 */

export interface Position {
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units like every JavaScript string index. */
  column: number;
}

interface NodeBase {
  pos: Position;
  /** Nodes this one stands for once aliases are expanded (itself included). */
  size: number;
  /** Nesting below this node once aliases are expanded (0 for a scalar). */
  height: number;
}

export interface YamlScalar extends NodeBase {
  kind: 'scalar';
  value: string | number | boolean | null;
  /** The decoded text as written (`0x10`, `1.0`, `yes`): what a string field takes from a number. */
  text: string;
}

export interface YamlSeq extends NodeBase {
  kind: 'seq';
  items: YamlNode[];
}

export interface YamlEntry {
  key: YamlScalar;
  value: YamlNode;
}

export interface YamlMap extends NodeBase {
  kind: 'map';
  /** In source order; keys are the scalar keys' text. */
  entries: Map<string, YamlEntry>;
}

export type YamlNode = YamlScalar | YamlSeq | YamlMap;

export const YAML_LIMITS = {
  /** Deepest nesting of collections, counted after alias expansion too. */
  maxDepth: 64,
  /**
   * Most nodes the document may stand for once every alias is expanded. A file without aliases
   * holds far fewer; an alias bomb ("billion laughs") crosses it after a handful of aliases.
   */
  maxNodes: 100_000,
  /** Longest source read, in characters (the HTTP layer already caps bodies at 1 MiB). */
  maxChars: 1024 * 1024,
} as const;

export class YamlTreeError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
    this.name = 'YamlTreeError';
  }
}

const CORE = 'tag:yaml.org,2002:';
const SCALAR_TAGS: Record<string, ScalarTagDefinition<unknown>> = {
  [`${CORE}str`]: strTag,
  [`${CORE}int`]: intCoreTag,
  [`${CORE}float`]: floatCoreTag,
  [`${CORE}bool`]: boolCoreTag,
  [`${CORE}null`]: nullCoreTag,
};
/** Core-schema resolution order of plain scalars. */
const IMPLICIT: ScalarTagDefinition<unknown>[] = [nullCoreTag, boolCoreTag, intCoreTag, floatCoreTag];

/** Line starts of a source, for offset → line/column. */
class LineIndex {
  private readonly starts: number[] = [0];

  constructor(source: string) {
    for (let i = 0; i < source.length; i++) {
      const c = source.charCodeAt(i);
      if (c === 0x0a) this.starts.push(i + 1);
      else if (c === 0x0d && source.charCodeAt(i + 1) !== 0x0a) this.starts.push(i + 1);
    }
  }

  at(offset: number): Position {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - this.starts[lo] + 1 };
  }
}

interface Frame {
  node: YamlSeq | YamlMap;
  anchor: string | null;
  pendingKey: YamlScalar | null;
  /** Values of `<<` merge keys, applied when the mapping closes. */
  merges: YamlNode[];
}

/**
 * Parses one YAML document into a positioned tree. Returns null for a source with no document (empty
 * or only comments). Throws {@link YamlTreeError} (1-based line and column) for anything that is not
 * one well-formed, safe document.
 */
export function parseYamlTree(input: string): YamlNode | null {
  // A byte-order mark is invisible in editors: columns are counted without it.
  const source = input.startsWith('\uFEFF') ? input.slice(1) : input;
  if (source.length > YAML_LIMITS.maxChars)
    throw new YamlTreeError(`the document is larger than ${YAML_LIMITS.maxChars} characters`, 1, 1);
  const lines = new LineIndex(source);
  let events: Event[];
  try {
    events = parseEvents(source, { maxDepth: YAML_LIMITS.maxDepth });
  } catch (err) {
    if (err instanceof YAMLException) {
      throw new YamlTreeError(err.reason, (err.mark?.line ?? 0) + 1, (err.mark?.column ?? 0) + 1);
    }
    // The parser's own failures (a stack overflow on hostile input) are still the document's fault.
    throw new YamlTreeError('the document could not be parsed', 1, 1);
  }
  return new TreeBuilder(source, lines, events).build();
}

class TreeBuilder {
  private readonly anchors = new Map<string, YamlNode>();
  /** Plain `<<` keys: a quoted "<<" is an ordinary key. */
  private readonly mergeKeys = new WeakSet<YamlScalar>();
  private readonly stack: Frame[] = [];
  private root: YamlNode | null = null;
  private documents = 0;
  /** Nodes the document stands for so far, aliases counted at their expanded size. */
  private expanded = 0;

  constructor(
    private readonly source: string,
    private readonly lines: LineIndex,
    private readonly events: Event[],
  ) {}

  build(): YamlNode | null {
    for (let i = 0; i < this.events.length; i++) {
      const event = this.events[i];
      switch (event.type) {
        case EVENT_ID.DOCUMENT:
          if (++this.documents > 1)
            this.fail('a stack definition is a single YAML document; remove the second one', i + 1);
          if (event.directives.some((d) => d.kind === 'tag'))
            this.fail('%TAG directives are not supported', i + 1);
          break;
        case EVENT_ID.MAPPING:
        case EVENT_ID.SEQUENCE: {
          const kind = event.type === EVENT_ID.MAPPING ? 'map' : 'seq';
          const offset = this.minOffset(event.start, event.anchorStart - 1, event.tagStart);
          const pos = this.lines.at(offset);
          if (event.tagStart >= 0) this.checkCollectionTag(event.tagStart, event.tagEnd, kind);
          this.count(1, pos);
          const node: YamlSeq | YamlMap =
            kind === 'map'
              ? { kind, entries: new Map(), pos, size: 1, height: 1 }
              : { kind, items: [], pos, size: 1, height: 1 };
          this.stack.push({ node, anchor: this.anchorName(event), pendingKey: null, merges: [] });
          break;
        }
        case EVENT_ID.SCALAR: {
          const node = this.scalar(event);
          this.count(1, node.pos);
          const anchor = this.anchorName(event);
          if (anchor !== null) this.anchors.set(anchor, node);
          this.add(node);
          break;
        }
        case EVENT_ID.ALIAS: {
          const name = this.source.slice(event.anchorStart, event.anchorEnd);
          const pos = this.lines.at(event.anchorStart - 1);
          const target = this.anchors.get(name);
          if (target === undefined) throw this.error(`unknown alias *${name.slice(0, 64)}`, pos);
          this.count(target.size, pos, true);
          if (this.stack.length + target.height > YAML_LIMITS.maxDepth)
            throw this.error(`the alias nests deeper than ${YAML_LIMITS.maxDepth} levels`, pos);
          // A shallow copy: the alias itself reports at its own position, its contents at theirs.
          this.add({ ...target, pos });
          break;
        }
        case EVENT_ID.POP: {
          const frame = this.stack.pop();
          if (frame === undefined) break; // end of a document
          if (frame.node.kind === 'map') this.applyMerges(frame.node, frame.merges);
          if (frame.anchor !== null) this.anchors.set(frame.anchor, frame.node);
          this.add(frame.node);
          break;
        }
      }
    }
    return this.root;
  }

  private add(node: YamlNode): void {
    const frame = this.stack.at(-1);
    if (frame === undefined) {
      this.root =
        node.kind === 'scalar' && node.pos.line === 0 ? { ...node, pos: { line: 1, column: 1 } } : node;
      return;
    }
    const parent = frame.node;
    parent.size += node.size;
    parent.height = Math.max(parent.height, node.height + 1);
    // An empty node has no text of its own: it is reported where its key (or parent) is.
    const empty = node.kind === 'scalar' && node.pos.line === 0;
    if (parent.kind === 'seq') {
      parent.items.push(empty ? { ...node, pos: parent.pos } : node);
      return;
    }
    if (frame.pendingKey === null) {
      if (node.kind !== 'scalar') throw this.error('mapping keys must be plain values', node.pos);
      const key = empty ? { ...node, pos: parent.pos } : node;
      const merge = this.mergeKeys.has(node);
      if (parent.entries.has(key.text) || (merge && frame.merges.length > 0))
        throw this.error(`duplicate key ${JSON.stringify(key.text.slice(0, 64))}`, key.pos);
      if (merge) this.mergeKeys.add(key);
      frame.pendingKey = key;
      return;
    }
    const key = frame.pendingKey;
    frame.pendingKey = null;
    const value = empty ? { ...node, pos: key.pos } : node;
    if (this.mergeKeys.has(key)) {
      if (value.kind === 'map' || (value.kind === 'seq' && value.items.every((i) => i.kind === 'map'))) {
        frame.merges.push(value);
        return;
      }
      throw this.error('a merge key (<<) takes a mapping or a list of mappings', value.pos);
    }
    parent.entries.set(key.text, { key, value });
  }

  /** YAML merge keys: explicit keys win, then earlier merged mappings over later ones. */
  private applyMerges(node: YamlMap, merges: YamlNode[]): void {
    for (const merge of merges) {
      const sources = merge.kind === 'seq' ? merge.items : [merge];
      for (const src of sources) {
        if (src.kind !== 'map') continue;
        for (const [key, entry] of src.entries) {
          if (!node.entries.has(key)) node.entries.set(key, entry);
        }
      }
    }
  }

  private scalar(event: ScalarEvent): YamlScalar {
    const text = getScalarValue(this.source, event);
    const quoted = event.style === SCALAR_STYLE.SINGLE_QUOTED || event.style === SCALAR_STYLE.DOUBLE_QUOTED;
    let valueOffset = event.valueStart;
    if (valueOffset >= 0 && quoted) valueOffset -= 1;
    else if (valueOffset >= 0 && event.style !== SCALAR_STYLE.PLAIN) {
      // Block scalars start at their content's indentation; point at the first character instead.
      while (valueOffset < event.valueEnd && /\s/.test(this.source[valueOffset])) valueOffset++;
    }
    const offset = this.minOffset(valueOffset, event.anchorStart - 1, event.tagStart);
    // line 0 marks "no text of its own" (an empty value); add() moves it to its key.
    const pos = offset >= 0 ? this.lines.at(offset) : { line: 0, column: 0 };
    let value: YamlScalar['value'];
    if (event.tagStart >= 0) {
      value = this.explicitScalar(text, event, pos);
    } else if (event.style === SCALAR_STYLE.PLAIN) {
      value = text;
      for (const tag of IMPLICIT) {
        const resolved = tag.resolve(text, false, tag.tagName);
        if (resolved !== NOT_RESOLVED) {
          value = resolved as YamlScalar['value'];
          break;
        }
      }
    } else value = text;
    const node: YamlScalar = { kind: 'scalar', value, text, pos, size: 1, height: 0 };
    if (event.style === SCALAR_STYLE.PLAIN && event.tagStart < 0 && text === '<<') this.mergeKeys.add(node);
    return node;
  }

  private explicitScalar(text: string, event: ScalarEvent, pos: Position): YamlScalar['value'] {
    const raw = this.source.slice(event.tagStart, event.tagEnd);
    if (raw === '!') return text; // the non-specific tag: a string
    const tag = SCALAR_TAGS[this.tagName(raw)];
    if (tag === undefined) throw this.error(`unknown tag ${raw.slice(0, 64)}`, this.lines.at(event.tagStart));
    const value = tag.resolve(text, true, tag.tagName);
    if (value === NOT_RESOLVED) throw this.error(`the value does not fit its tag ${raw}`, pos);
    return value as YamlScalar['value'];
  }

  private checkCollectionTag(start: number, end: number, kind: 'map' | 'seq'): void {
    const raw = this.source.slice(start, end);
    if (raw === '!' || this.tagName(raw) === `${CORE}${kind}`) return;
    throw this.error(`unknown tag ${raw.slice(0, 64)}`, this.lines.at(start));
  }

  /** `!!int` and `!<tag:yaml.org,2002:int>` name the same tag; local tags (`!foo`) name none. */
  private tagName(raw: string): string {
    if (raw.startsWith('!!')) return `${CORE}${raw.slice(2)}`;
    if (raw.startsWith('!<') && raw.endsWith('>')) return raw.slice(2, -1);
    return raw;
  }

  private anchorName(event: { anchorStart: number; anchorEnd: number }): string | null {
    return event.anchorStart >= 0 ? this.source.slice(event.anchorStart, event.anchorEnd) : null;
  }

  private count(nodes: number, pos: Position, alias = false): void {
    this.expanded += nodes;
    if (this.expanded > YAML_LIMITS.maxNodes) {
      throw this.error(
        alias
          ? `aliases expand the document beyond ${YAML_LIMITS.maxNodes} nodes`
          : `the document has more than ${YAML_LIMITS.maxNodes} nodes`,
        pos,
      );
    }
  }

  private minOffset(...offsets: number[]): number {
    const valid = offsets.filter((o) => o >= 0);
    return valid.length > 0 ? Math.min(...valid) : -1;
  }

  /** Fails at the position of the first event from `index` on that has one. */
  private fail(message: string, index: number): never {
    for (let i = index; i < this.events.length; i++) {
      const e = this.events[i];
      const offset =
        e.type === EVENT_ID.MAPPING || e.type === EVENT_ID.SEQUENCE
          ? e.start
          : e.type === EVENT_ID.SCALAR
            ? e.valueStart
            : e.type === EVENT_ID.ALIAS
              ? e.anchorStart - 1
              : -1;
      if (offset >= 0) throw this.error(message, this.lines.at(offset));
    }
    throw this.error(message, this.lines.at(this.source.length));
  }

  private error(message: string, pos: Position): YamlTreeError {
    return new YamlTreeError(message, Math.max(pos.line, 1), Math.max(pos.column, 1));
  }
}
