/**
 * PromQL text to the engine's syntax tree: `@prometheus-io/lezer-promql` parses, this walks its
 * tree (node names as that grammar defines them) applying what Prometheus 2.42's yacc actions do
 * (number folding under unary minus, offset and @ placement rules, durations), then the static type
 * checks of `check.ts`. Syntax the 2.42 grammar lacks (duration arithmetic, quoted names, newer
 * modifiers) is refused.
 */
import { parser } from '@prometheus-io/lezer-promql';
import type { Matcher, MatchType } from '../series.js';
import type { AggregateOp, BinaryOp, Expr, VectorMatching, VectorSelector } from './ast.js';
import { checkAst } from './check.js';
import { PromqlParseError } from './errors.js';
import { HOLT_WINTERS_ALIAS, positionOf, prepareSource } from './parse-scan.js';
import { children, findError, NodeReader, type SyntaxNode } from './parse-nodes.js';
import { buildOperators, type Token } from './parse-operators.js';
import { FUNCTIONS } from './functions/signatures.js';
import { MetricInputError } from '../errors.js';
import { METRIC_NAME_LABEL } from '../labels.js';
import { compileRe2 } from '../re2.js';

const BINARY_OPS: Record<string, BinaryOp> = {
  Add: '+',
  Sub: '-',
  Mul: '*',
  Div: '/',
  Mod: '%',
  Pow: '^',
  Atan2: 'atan2',
  Eql: '==',
  Neq: '!=',
  Gtr: '>',
  Lss: '<',
  Gte: '>=',
  Lte: '<=',
  And: 'and',
  Or: 'or',
  Unless: 'unless',
};
const MATCH_OPS: Record<string, MatchType> = { EqlSingle: '=', Neq: '!=', EqlRegex: '=~', NeqRegex: '!~' };
const AGGREGATE_OPS = new Set(['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count']);
const PARAM_AGGREGATE_OPS = new Set(['count_values', 'bottomk', 'topk', 'quantile']);

/**
 * Parses and type-checks a PromQL expression; throws PromqlParseError. A query nested more than
 * MAX_NESTING levels is refused before lezer parses it (lezer's tree building and every walk over
 * the tree recurse per level); should a stack still overflow, that is a parse error too, not a defect.
 */
export function parseExpr(query: string): Expr {
  try {
    return parseChecked(query);
  } catch (err) {
    if (err instanceof RangeError) throw new PromqlParseError(`query too complex to parse (${err.message})`);
    throw err;
  }
}

function parseChecked(query: string): Expr {
  const source = prepareSource(query);
  const tree = parser.parse(source);
  const top = children(tree.topNode);
  const errorNode = findError(tree.topNode);
  if (errorNode) {
    if (top.length === 0 || (errorNode.from >= source.trimEnd().length && source.trim() === ''))
      throw new PromqlParseError('no expression found in input');
    const at = errorNode.from;
    const found =
      at >= source.length ? 'end of input' : JSON.stringify(source.slice(at, at + 10).split(/\s/)[0]);
    throw new PromqlParseError(`unexpected ${found}`, positionOf(source, at));
  }
  if (top.length !== 1) throw new PromqlParseError('no expression found in input');
  const expr = new Converter(source).expr(top[0]);
  checkAst(expr);
  return expr;
}

/** A series selector as `match[]` takes it (parser.ParseMetricSelector): its matchers. */
export function parseSeriesSelector(query: string): Matcher[] {
  const expr = parseExpr(query);
  if (expr.type !== 'vectorSelector' || expr.offset !== 0 || expr.at !== null)
    throw new PromqlParseError('expected a series selector');
  return expr.matchers;
}

class Converter extends NodeReader {
  expr(node: SyntaxNode): Expr {
    const kids = children(node);
    switch (node.name) {
      case 'NumberDurationLiteral':
        if (/^[+-]/.test(this.text(node))) return this.operators(node);
        return { type: 'number', value: this.number(node) };
      case 'StringLiteral':
        return { type: 'string', value: this.string(node) };
      case 'ParenExpr':
        return { type: 'paren', expr: this.expr(kids[0]) };
      case 'UnaryExpr':
      case 'BinaryExpr':
      case 'MatrixSelector':
      case 'SubqueryExpr':
      case 'OffsetExpr':
      case 'StepInvariantExpr':
        return this.operators(node);
      case 'AggregateExpr':
        return this.aggregate(node, kids);
      case 'FunctionCall':
        return this.call(node, kids);
      case 'VectorSelector':
        return this.vectorSelector(node, kids);
      default:
        return this.fail(node, `unexpected ${node.name}`);
    }
  }

  /** An operator expression: flattened to tokens, rebuilt by 2.42's precedence (parse-operators.ts). */
  private operators(node: SyntaxNode): Expr {
    const tokens: Token[] = [];
    this.flatten(node, tokens);
    return buildOperators(tokens);
  }

  private flatten(node: SyntaxNode, tokens: Token[]): void {
    const kids = children(node);
    const text = this.text(node);
    switch (node.name) {
      case 'BinaryExpr':
        this.flatten(kids[0], tokens);
        tokens.push(this.operator(kids));
        this.flatten(kids[kids.length - 1], tokens);
        return;
      case 'UnaryExpr':
        tokens.push({ kind: 'unary', op: this.text(kids[0]) as '+' | '-' });
        this.flatten(kids[1], tokens);
        return;
      case 'NumberDurationLiteral': {
        // lezer reads `-2` as one literal; to 2.42 the sign is a unary operator.
        if (!/^[+-]/.test(text)) break;
        const value = this.number(node);
        tokens.push({ kind: 'unary', op: text[0] as '+' | '-' });
        tokens.push({ kind: 'operand', expr: { type: 'number', value: text[0] === '-' ? -value : value } });
        return;
      }
      case 'MatrixSelector':
      case 'SubqueryExpr':
      case 'OffsetExpr':
      case 'StepInvariantExpr': {
        const apply = this.modifier(node, kids);
        this.flatten(kids[0], tokens);
        const last = tokens[tokens.length - 1];
        if (last.kind !== 'operand') this.fail(node, `unexpected ${text}`);
        last.expr = apply(last.expr);
        return;
      }
      default:
        break;
    }
    tokens.push({ kind: 'operand', expr: this.expr(node) });
  }

  private operator(kids: SyntaxNode[]): Token {
    const opNode = kids[1];
    const op = BINARY_OPS[opNode.name] ?? this.fail(opNode, `unexpected operator ${this.text(opNode)}`);
    let returnBool = false;
    const matching: VectorMatching = { card: 'one-to-one', on: false, labels: [], include: [] };
    for (const mod of kids.slice(2, -1)) {
      if (mod.name === 'BoolModifier') returnBool = true;
      else if (mod.name === 'MatchingModifierClause') this.matching(mod, matching);
      else this.fail(mod, `unexpected ${this.text(mod)}`);
    }
    return { kind: 'binary', op, returnBool, matching };
  }

  private matching(node: SyntaxNode, matching: VectorMatching): void {
    for (const part of children(node)) {
      if (part.name === 'On') matching.on = true;
      else if (part.name === 'GroupLeft') matching.card = 'many-to-one';
      else if (part.name === 'GroupRight') matching.card = 'one-to-many';
      else if (part.name === 'GroupingLabels') {
        if (matching.card === 'one-to-one') matching.labels = this.labelNames(part);
        else matching.include = this.labelNames(part);
      } else if (part.name !== 'Ignoring') this.fail(part, `unexpected ${this.text(part)}`);
    }
  }

  private labelNames(node: SyntaxNode): string[] {
    return children(node).map((n) => {
      // lezer reads inf and nan there as names; 2.42 as numbers.
      if (n.name !== 'LabelName' || /^(inf|nan)$/i.test(this.text(n)))
        this.fail(n, `unexpected ${this.text(n)} in grouping opts, expected label`);
      return this.text(n);
    });
  }

  private aggregate(node: SyntaxNode, kids: SyntaxNode[]): Expr {
    const op = this.text(kids[0]).toLowerCase();
    if (!AGGREGATE_OPS.has(op) && !PARAM_AGGREGATE_OPS.has(op))
      this.fail(node, `unknown function with name ${JSON.stringify(this.text(kids[0]))}`);
    let grouping: string[] = [];
    let without = false;
    let args: Expr[] = [];
    for (const part of kids.slice(1)) {
      if (part.name === 'AggregateModifier') {
        const [kind, labels] = children(part);
        without = kind.name === 'Without';
        grouping = labels ? this.labelNames(labels) : [];
      } else args = children(part).map((a) => this.expr(a));
    }
    if (args.length === 0) this.fail(node, 'no arguments for aggregate expression provided');
    const wanted = PARAM_AGGREGATE_OPS.has(op) ? 2 : 1;
    if (args.length !== wanted)
      this.fail(
        node,
        `wrong number of arguments for aggregate expression provided, expected ${wanted}, got ${args.length}`,
      );
    const param = wanted === 2 ? args[0] : null;
    return { type: 'aggregate', op: op as AggregateOp, expr: args[wanted - 1], param, grouping, without };
  }

  private call(node: SyntaxNode, kids: SyntaxNode[]): Expr {
    const written = this.text(kids[0]);
    const name = written === HOLT_WINTERS_ALIAS ? 'holt_winters' : written;
    if (!FUNCTIONS.has(name) || (written === name && name === HOLT_WINTERS_ALIAS))
      this.fail(node, `unknown function with name ${JSON.stringify(written)}`);
    return { type: 'call', func: name, args: children(kids[1]).map((a) => this.expr(a)) };
  }

  private vectorSelector(node: SyntaxNode, kids: SyntaxNode[]): VectorSelector {
    let name = '';
    const matchers: Matcher[] = [];
    for (const part of kids) {
      if (part.name === 'Identifier') {
        name = this.text(part);
        // lezer takes `atan2` for a name; to 2.42 it is always the operator.
        if (name.toLowerCase() === 'atan2') this.fail(part, 'unexpected <op:atan2>');
      } else if (part.name === 'LabelMatchers')
        for (const m of children(part)) matchers.push(this.matcher(m));
      else this.fail(part, `unexpected ${this.text(part)} in vector selector`);
    }
    if (name) matchers.push({ type: '=', name: METRIC_NAME_LABEL, value: name });
    return { type: 'vectorSelector', name, matchers, offset: 0, at: null };
  }

  private matcher(node: SyntaxNode): Matcher {
    const [label, op, value] = children(node);
    if (node.name !== 'UnquotedLabelMatcher' || !value)
      this.fail(
        node,
        `unexpected ${JSON.stringify(this.text(node))} in label matching, expected identifier or "}"`,
      );
    const type = MATCH_OPS[children(op)[0].name];
    const matcher: Matcher = { type, name: this.text(label), value: this.string(value) };
    if (type === '=~' || type === '!~') {
      try {
        compileRe2(matcher.value);
      } catch (err) {
        if (err instanceof MetricInputError) this.fail(value, err.message);
        throw err;
      }
    }
    return matcher;
  }
}
