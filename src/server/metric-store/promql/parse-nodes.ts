/**
 * Reading lezer-promql's nodes for parse.ts: literals, durations, and the postfix modifiers (range,
 * subquery, offset, @) with 2.42's rules for what they may follow.
 */
import { parser } from '@prometheus-io/lezer-promql';
import type { AtModifier, Expr } from './ast.js';
import { PromqlParseError } from './errors.js';
import { parseDuration, parseNumberLiteral, unquoteString } from './lexical.js';
import { positionOf } from './parse-scan.js';

export type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

export function findError(node: SyntaxNode): SyntaxNode | null {
  if (node.type.isError) return node;
  for (let c = node.firstChild; c; c = c.nextSibling) {
    const found = findError(c);
    if (found) return found;
  }
  return null;
}

export function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (let c = node.firstChild; c; c = c.nextSibling) if (c.name !== 'LineComment') out.push(c);
  return out;
}

export abstract class NodeReader {
  constructor(protected readonly source: string) {}

  abstract expr(node: SyntaxNode): Expr;

  protected text(node: SyntaxNode): string {
    return this.source.slice(node.from, node.to);
  }

  protected fail(node: SyntaxNode, message: string): never {
    throw new PromqlParseError(message, positionOf(this.source, node.from));
  }

  protected number(node: SyntaxNode): number {
    const value = parseNumberLiteral(this.text(node));
    if (value === undefined)
      this.fail(node, `bad number or duration syntax: ${JSON.stringify(this.text(node))}`);
    return value;
  }

  protected string(node: SyntaxNode): string {
    const value = unquoteString(this.text(node));
    if (value === undefined) this.fail(node, `invalid string literal ${this.text(node)}`);
    return value;
  }

  /** A duration as 2.42 takes it: one literal with units, greater than zero. */
  protected duration(node: SyntaxNode, wrapper = 'DurationExpr'): number {
    const kids = children(node);
    const literal = node.name === wrapper && kids.length === 1 ? kids[0] : null;
    if (!literal || literal.name !== 'NumberDurationLiteralInDurationContext')
      this.fail(node, `unexpected ${JSON.stringify(this.text(node))} in duration`);
    const ms = parseDuration(this.text(literal));
    if (typeof ms === 'string') this.fail(literal, ms);
    if (ms === 0) this.fail(literal, 'duration must be greater than 0');
    return ms;
  }

  /** What a postfix node (range, subquery, offset, @) does to the operand it follows. */
  protected modifier(node: SyntaxNode, kids: SyntaxNode[]): (target: Expr) => Expr {
    switch (node.name) {
      case 'MatrixSelector': {
        const range = this.duration(kids[1]);
        return (inner) => {
          if (inner.type !== 'vectorSelector') this.fail(node, 'ranges only allowed for vector selectors');
          if (inner.offset !== 0) this.fail(node, 'no offset modifiers allowed before range');
          if (inner.at !== null) this.fail(node, 'no @ modifiers allowed before range');
          return { type: 'matrixSelector', selector: inner, range };
        };
      }
      case 'SubqueryExpr': {
        const range = this.duration(kids[1]);
        const step = kids[2] ? this.duration(kids[2]) : 0;
        return (inner) => ({ type: 'subquery', expr: inner, range, step, offset: 0, at: null });
      }
      case 'OffsetExpr':
        return (target) => this.setOffset(node, kids, target);
      default:
        return (target) => this.setAt(node, kids, target);
    }
  }

  protected setOffset(node: SyntaxNode, kids: SyntaxNode[], target: Expr): Expr {
    let durationNode = kids[2];
    let sign = 1;
    const parts = children(durationNode);
    // 2.42 takes `offset -<duration>` and nothing more elaborate.
    if (parts.length === 2 && parts[0].name === 'UnaryOp' && this.text(parts[0]) === '-') {
      sign = -1;
      durationNode = parts[1];
    }
    const ms = this.duration(durationNode, 'OffsetDurationExpr');
    const holder = target.type === 'matrixSelector' ? target.selector : target;
    if (holder.type !== 'vectorSelector' && holder.type !== 'subquery')
      this.fail(
        node,
        'offset modifier must be preceded by an instant vector selector or range vector selector or a subquery',
      );
    if (holder.offset !== 0) this.fail(node, 'offset may not be set multiple times');
    holder.offset = sign * ms;
    return target;
  }

  protected setAt(node: SyntaxNode, kids: SyntaxNode[], target: Expr): Expr {
    const holder = target.type === 'matrixSelector' ? target.selector : target;
    if (holder.type !== 'vectorSelector' && holder.type !== 'subquery')
      this.fail(
        node,
        '@ modifier must be preceded by an instant vector selector or range vector selector or a subquery',
      );
    const value = kids[2];
    let at: AtModifier;
    if (value.name === 'AtModifierPreprocessors')
      at = children(value)[0].name === 'AtStart' ? 'start' : 'end';
    else {
      const seconds = this.number(value);
      if (!Number.isFinite(seconds) || Math.abs(seconds) >= 9.223372036854776e18)
        this.fail(node, `timestamp out of bounds for @ modifier: ${seconds}`);
      // timestamp.FromFloatSeconds: math.Round, which rounds halves away from zero.
      at = Math.sign(seconds) * Math.round(Math.abs(seconds * 1000));
    }
    if (holder.at !== null) this.fail(node, '@ <timestamp> may not be set multiple times');
    holder.at = at;
    return target;
  }
}
