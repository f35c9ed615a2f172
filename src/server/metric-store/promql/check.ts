/**
 * Prometheus 2.42's static checks (parser.checkAST) and expression types. The messages follow
 * Prometheus's wording; the API reports them as `bad_data`.
 */
import type { Expr, ValueType } from './ast.js';
import { isComparison, isSetOp } from './ast.js';
import { PromqlParseError } from './errors.js';
import { FUNCTIONS } from './functions/signatures.js';
import { METRIC_NAME_LABEL } from '../labels.js';
import { compileMatcher } from '../matchers.js';

export function valueType(e: Expr): ValueType {
  switch (e.type) {
    case 'number':
      return 'scalar';
    case 'string':
      return 'string';
    case 'paren':
    case 'unary':
      return valueType(e.expr);
    case 'binary':
      return valueType(e.lhs) === 'scalar' && valueType(e.rhs) === 'scalar' ? 'scalar' : 'vector';
    case 'aggregate':
    case 'vectorSelector':
      return 'vector';
    case 'call':
      return FUNCTIONS.get(e.func)!.returnType;
    case 'matrixSelector':
    case 'subquery':
      return 'matrix';
  }
}

/** parser.DocumentedType: how the messages name the types. */
export function documentedType(t: ValueType): string {
  return t === 'vector' ? 'instant vector' : t === 'matrix' ? 'range vector' : t;
}

function fail(message: string): never {
  throw new PromqlParseError(message);
}

function expectType(e: Expr, want: ValueType, context: string): void {
  const got = checkAst(e);
  if (got !== want) fail(`expected type ${documentedType(want)} in ${context}, got ${documentedType(got)}`);
}

export function checkAst(e: Expr): ValueType {
  const type = valueType(e);
  switch (e.type) {
    case 'aggregate':
      expectType(e.expr, 'vector', 'aggregation expression');
      if (e.op === 'topk' || e.op === 'bottomk' || e.op === 'quantile')
        expectType(e.param!, 'scalar', 'aggregation parameter');
      if (e.op === 'count_values') expectType(e.param!, 'string', 'aggregation parameter');
      break;
    case 'binary':
      checkBinary(e);
      break;
    case 'call':
      checkCall(e.func, e.args);
      break;
    case 'paren':
      checkAst(e.expr);
      break;
    case 'unary': {
      const t = checkAst(e.expr);
      if (t !== 'scalar' && t !== 'vector')
        fail(
          `unary expression only allowed on expressions of type scalar or instant vector, got "${documentedType(t)}"`,
        );
      break;
    }
    case 'subquery': {
      const t = checkAst(e.expr);
      if (t !== 'vector') fail(`subquery is only allowed on instant vector, got ${t} instead`);
      break;
    }
    case 'matrixSelector':
      checkAst(e.selector);
      break;
    case 'vectorSelector':
      if (e.name !== '') {
        for (const m of e.matchers.slice(0, -1))
          if (m.name === METRIC_NAME_LABEL)
            fail(`metric name must not be set twice: "${e.name}" or "${m.value}"`);
      } else if (!e.matchers.some((m) => !compileMatcher(m).matchesValue('')))
        fail('vector selector must contain at least one non-empty matcher');
      break;
    case 'number':
    case 'string':
      break;
  }
  return type;
}

function checkBinary(e: Extract<Expr, { type: 'binary' }>): void {
  const lt = checkAst(e.lhs);
  const rt = checkAst(e.rhs);
  if (e.returnBool && !isComparison(e.op)) fail('bool modifier can only be used on comparison operators');
  if (isComparison(e.op) && !e.returnBool && lt === 'scalar' && rt === 'scalar')
    fail('comparisons between scalars must use BOOL modifier');
  const matching = e.matching!;
  if (isSetOp(e.op) && matching.card === 'one-to-one') matching.card = 'many-to-many';
  for (const l of matching.labels)
    if (matching.on && matching.include.includes(l))
      fail(`label "${l}" must not occur in ON and GROUP clause at once`);
  if (lt !== 'scalar' && lt !== 'vector')
    fail('binary expression must contain only scalar and instant vector types');
  if (rt !== 'scalar' && rt !== 'vector')
    fail('binary expression must contain only scalar and instant vector types');
  if (lt !== 'vector' || rt !== 'vector') {
    if (matching.labels.length > 0) fail('vector matching only allowed between instant vectors');
    e.matching = null;
  } else if (isSetOp(e.op)) {
    if (matching.card === 'one-to-many' || matching.card === 'many-to-one')
      fail(`no grouping allowed for "${e.op}" operation`);
    if (matching.card !== 'many-to-many') fail('set operations must always be many-to-many');
  }
  if ((lt === 'scalar' || rt === 'scalar') && isSetOp(e.op))
    fail(`set operator "${e.op}" not allowed in binary scalar expression`);
}

function checkCall(name: string, args: Expr[]): void {
  const f = FUNCTIONS.get(name)!;
  const nargs = f.argTypes.length;
  if (f.variadic === 0) {
    if (nargs !== args.length) fail(`expected ${nargs} argument(s) in call to "${name}", got ${args.length}`);
  } else {
    const min = nargs - 1;
    if (min > args.length)
      fail(`expected at least ${min} argument(s) in call to "${name}", got ${args.length}`);
    if (f.variadic > 0 && min + f.variadic < args.length)
      fail(`expected at most ${min + f.variadic} argument(s) in call to "${name}", got ${args.length}`);
  }
  args.forEach((arg, i) => {
    if (i >= nargs && f.variadic === 0) return;
    const want = f.argTypes[Math.min(i, nargs - 1)];
    expectType(arg, want, `call to function "${name}"`);
  });
}
