/**
 * Operator structure as Prometheus 2.42's yacc grammar builds it. lezer-promql's tree groups some
 * expressions differently (a trailing `offset` above a whole binary expression, `-2` as one
 * literal in `-2 ^ 2`), so parse.ts flattens each unparenthesized operator expression into tokens
 * (postfix modifiers already applied to their operand, which they bind tightest) and this
 * rebuilds the tree by 2.42's precedence: `or` < `and unless` < comparisons < `+ -` <
 * `* / % atan2` < `^` (right-associative); unary `+`/`-` binds like `*` (its operand extends over
 * `^` only) and folds into a number literal directly under it.
 */
import type { BinaryOp, Expr, VectorMatching } from './ast.js';

export type Token =
  | { kind: 'operand'; expr: Expr }
  | { kind: 'unary'; op: '+' | '-' }
  | { kind: 'binary'; op: BinaryOp; returnBool: boolean; matching: VectorMatching };

const PRECEDENCE: Record<BinaryOp, number> = {
  or: 1,
  and: 2,
  unless: 2,
  '==': 3,
  '!=': 3,
  '>': 3,
  '<': 3,
  '>=': 3,
  '<=': 3,
  '+': 4,
  '-': 4,
  '*': 5,
  '/': 5,
  '%': 5,
  atan2: 5,
  '^': 6,
};

export function buildOperators(tokens: Token[]): Expr {
  let i = 0;
  const unary = (): Expr => {
    const t = tokens[i++];
    if (t.kind === 'operand') return t.expr;
    if (t.kind !== 'unary') throw new Error('an operand was expected');
    const operand = binary(PRECEDENCE['^']);
    if (operand.type === 'number')
      return { type: 'number', value: t.op === '-' ? -operand.value : operand.value };
    return { type: 'unary', op: t.op, expr: operand };
  };
  const binary = (min: number): Expr => {
    let lhs = unary();
    for (;;) {
      const t = tokens[i];
      if (t?.kind !== 'binary' || PRECEDENCE[t.op] < min) return lhs;
      i++;
      const rhs = binary(t.op === '^' ? PRECEDENCE[t.op] : PRECEDENCE[t.op] + 1);
      lhs = { type: 'binary', op: t.op, lhs, rhs, returnBool: t.returnBool, matching: t.matching };
    }
  };
  const expr = binary(1);
  if (i !== tokens.length) throw new Error('operators left over');
  return expr;
}
