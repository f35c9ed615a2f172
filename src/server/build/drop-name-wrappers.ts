// Build time only (bundle-server.ts runs it over the service's bundle; the service never imports it).
//
// esbuild's `keepNames` keeps every function's and class's `name` through bundling by wrapping it:
// `const f = __name(() => …, "f")`, or a statement `__name(f, "f")` after `function f() {}`.
// `__name` redefines the function's `name` property, which turns that function object's properties
// into a dictionary: about 256 bytes more per closure and about 0.6 µs per call on this machine,
// paid every time a closure is created inside a function that runs per request or per connection
// (docs/benchmarks.md, "Memory per connected agent", session 20). Most wrappers are redundant: the
// function stands where JavaScript gives it that very name anyway (`const f = () => …` is named
// "f"). Those are blanked out here, character for character with spaces, so that every other
// character keeps its line and column and the bundle's source maps stay exact. A wrapper is kept
// wherever the name would differ without it: a variable esbuild renamed (`const f2 = __name(…,
// "f")`), a member assignment, an argument, a class; and wherever the function around it could
// give a declared function's name another value, or a removal could join lines.
//
// Written for esbuild's output; a review's counterexamples (test cases in the spec) are guarded
// against even where that output never holds them.
import { parse, type Node } from 'acorn';

type AnyNode = Node & Record<string, unknown>;

export interface DropNameWrappersResult {
  code: string;
  /** Wrappers blanked out. */
  dropped: number;
  /** `__name(...)` calls left as they were. */
  kept: number;
}

const NAMING_ASSIGNMENTS = new Set(['=', '||=', '&&=', '??=']);

function isNode(value: unknown): value is AnyNode {
  return (
    typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
  );
}

function children(node: AnyNode): AnyNode[] {
  const out: AnyNode[] = [];
  for (const key of Object.keys(node)) {
    const value = node[key];
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) out.push(item);
    } else if (isNode(value)) out.push(value);
  }
  return out;
}

/** `key` of a non-computed property or field as the name JavaScript would give its function. */
function keyName(key: AnyNode): string | undefined {
  if (key.type === 'Identifier') return key.name as string;
  if (key.type === 'PrivateIdentifier') return `#${key.name as string}`;
  if (key.type === 'Literal' && typeof key.value === 'string') return key.value;
  return undefined;
}

/**
 * The name an anonymous function expression standing as `node` under `parent` gets from the language
 * (named evaluation), or undefined where it gets none.
 */
function inferredName(parent: AnyNode, node: AnyNode): string | undefined {
  switch (parent.type) {
    case 'VariableDeclarator': {
      const id = parent.id as AnyNode;
      return parent.init === node && id.type === 'Identifier' ? (id.name as string) : undefined;
    }
    case 'AssignmentExpression':
    case 'AssignmentPattern': {
      const left = parent.left as AnyNode;
      if (parent.right !== node || left.type !== 'Identifier') return undefined;
      if (parent.type === 'AssignmentExpression' && !NAMING_ASSIGNMENTS.has(parent.operator as string))
        return undefined;
      // `(f) = …` names nothing; acorn starts a parenthesized target's assignment at the parenthesis.
      return parent.start === left.start ? (left.name as string) : undefined;
    }
    case 'Property': {
      if (
        parent.value !== node ||
        parent.kind !== 'init' ||
        parent.computed ||
        parent.method ||
        parent.shorthand
      ) {
        return undefined;
      }
      const name = keyName(parent.key as AnyNode);
      // `__proto__: function () {}` sets the prototype and names nothing.
      return name === '__proto__' ? undefined : name;
    }
    case 'PropertyDefinition':
      return parent.value === node && !parent.computed ? keyName(parent.key as AnyNode) : undefined;
    default:
      return undefined;
  }
}

/** `__name(target, "literal")`: the call's target and literal, or undefined for anything else. */
function nameCall(node: AnyNode): { target: AnyNode; name: string } | undefined {
  if (node.type !== 'CallExpression' || node.optional) return undefined;
  const callee = node.callee as AnyNode;
  const args = node.arguments as AnyNode[];
  if (callee.type !== 'Identifier' || callee.name !== '__name' || args.length !== 2) return undefined;
  const [target, literal] = args;
  if (literal.type !== 'Literal' || typeof literal.value !== 'string' || target.type === 'SpreadElement') {
    return undefined;
  }
  return { target, name: literal.value };
}

const STATEMENT_LISTS: Record<string, string> = {
  Program: 'body',
  BlockStatement: 'body',
  StaticBlock: 'body',
  SwitchCase: 'consequent',
};

/** The names a binding pattern (`x`, `{ a, b: [c] }`, `...rest`, `d = 1`) binds. */
function boundNames(pattern: AnyNode): string[] {
  switch (pattern.type) {
    case 'Identifier':
      return [pattern.name as string];
    case 'ObjectPattern':
      return (pattern.properties as AnyNode[]).flatMap((p) =>
        boundNames(p.type === 'RestElement' ? (p.argument as AnyNode) : (p.value as AnyNode)),
      );
    case 'ArrayPattern':
      return (pattern.elements as Array<AnyNode | null>).flatMap((e) => (e ? boundNames(e) : []));
    case 'AssignmentPattern':
      return boundNames(pattern.left as AnyNode);
    case 'RestElement':
      return boundNames(pattern.argument as AnyNode);
    default:
      return [];
  }
}

/**
 * The names a statement list declares functions under. Another binding of the same name there is
 * a `var` (a `let` or a class would not parse), which the function-wide check below sees.
 */
function functionsDeclaredIn(statements: AnyNode[]): Set<string> {
  const names = new Set<string>();
  for (const statement of statements) {
    const id = statement.id as AnyNode | null | undefined;
    if (statement.type === 'FunctionDeclaration' && id) names.add(id.name as string);
  }
  return names;
}

/** A node on the walk, with the chain of nodes above it. */
interface Entry {
  node: AnyNode;
  up?: Entry;
  /** The function (or the file) the node is in: its own entry for a function. */
  scope?: Entry;
}

const FUNCTIONS = new Set([
  'Program',
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
]);

/**
 * Where a `__name(f, "f")` call's value is `f` itself, and `f` can only be the function declared under
 * that name in the statement list the call stands in: the call is in that list's statement through
 * nothing that binds names (a statement, a return, a comma sequence).
 */
const TRANSPARENT = new Set(['ExpressionStatement', 'ReturnStatement', 'SequenceExpression']);

/**
 * The names a node binds or assigns (declarations, parameters, assignments, `++`): a declared
 * function's wrapper is dropped only if nothing else in the function around it (closures included)
 * can give its name another value, so that `f` where the wrapper stood is certainly the function
 * declared as `f`.
 */
function assignedNames(node: AnyNode): string[] {
  switch (node.type) {
    case 'VariableDeclarator':
      return boundNames(node.id as AnyNode);
    case 'AssignmentExpression':
      return boundNames(node.left as AnyNode);
    case 'UpdateExpression':
      return boundNames(node.argument as AnyNode);
    case 'ForInStatement':
    case 'ForOfStatement':
      return boundNames(node.left as AnyNode);
    case 'CatchClause':
      return node.param ? boundNames(node.param as AnyNode) : [];
    case 'FunctionDeclaration':
    case 'FunctionExpression':
    case 'ArrowFunctionExpression':
      return (node.params as AnyNode[]).flatMap((p) => boundNames(p));
    case 'ClassDeclaration':
    case 'ClassExpression':
      return node.id ? [(node.id as AnyNode).name as string] : [];
    case 'ImportSpecifier':
    case 'ImportDefaultSpecifier':
    case 'ImportNamespaceSpecifier':
      return [(node.local as AnyNode).name as string];
    default:
      return [];
  }
}

/**
 * Blanks out the `__name` wrappers whose names JavaScript would give the same functions by itself.
 * Written for esbuild's output (one `__name` helper, imported or declared at the top of each file);
 * a file that binds `__name` anywhere else is left as it is.
 */
export function dropNameWrappers(code: string): DropNameWrappersResult {
  const ast = parse(code, { ecmaVersion: 'latest', sourceType: 'module' }) as unknown as AnyNode;
  const blanks: Array<[number, number]> = [];
  let calls = 0;
  let dropped = 0;
  const lists = new Map<AnyNode, Set<string>>();
  const functionsIn = (owner: AnyNode): Set<string> => {
    let names = lists.get(owner);
    if (!names)
      lists.set(owner, (names = functionsDeclaredIn(owner[STATEMENT_LISTS[owner.type]] as AnyNode[])));
    return names;
  };
  /** Per function (and the file): the names given a value in it, closures included. */
  const assigned = new Map<AnyNode, Set<string>>();
  /** Per function (and the file): how many function declarations each name has in it. */
  const declarations = new Map<AnyNode, Map<string, number>>();
  /** `scope` and every function around it. */
  const scopesFrom = function* (scope: Entry | undefined) {
    for (let e = scope; e; e = e.up?.scope) yield e.node;
  };
  let helperBindings = 0;
  /** Declared functions' wrappers, dropped after the walk if nothing else assigns their names. */
  const pending: Array<{ name: string; scope: AnyNode; ranges: Array<[number, number]> }> = [];
  /**
   * `__name(` up to `target`, where it holds no line break: `return __name(\nf, "f")` must not become
   * a bare `return` (the functions named by where they stand are never after a `return`).
   */
  const head = (node: AnyNode, target: AnyNode): [number, number] | undefined =>
    /[\r\n\u2028\u2029]/.test(code.slice(node.start, target.start)) ? undefined : [node.start, target.start];
  const root: Entry = { node: ast };
  root.scope = root;
  const stack: Entry[] = [root];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const { node } = entry;
    const parent = entry.up?.node;
    if (node.type === 'FunctionDeclaration' && node.id) {
      const id = (node.id as AnyNode).name as string;
      for (const scope of scopesFrom(entry.up?.scope)) {
        let counts = declarations.get(scope);
        if (!counts) declarations.set(scope, (counts = new Map<string, number>()));
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
    for (const name of assignedNames(node)) {
      for (const scope of scopesFrom(entry.scope)) {
        let names = assigned.get(scope);
        if (!names) assigned.set(scope, (names = new Set<string>()));
        names.add(name);
      }
      if (name === '__name') {
        // The helper itself: `var __name = …` or `import { __name }` at the top of the file.
        const topLevel =
          (node.type === 'VariableDeclarator' && entry.up?.up?.node.type === 'Program') ||
          node.type === 'ImportSpecifier';
        helperBindings += topLevel ? 1 : 2;
      }
    }
    const call = nameCall(node);
    if (call) {
      calls += 1;
      const { target, name } = call;
      const anonymous =
        target.type === 'ArrowFunctionExpression' ||
        (target.type === 'FunctionExpression' && target.id === null);
      const start = head(node, target);
      if (anonymous && parent && inferredName(parent, node) === name) {
        // `__name(` and `, "name")` go; the function stays where the call was.
        blanks.push([node.start, target.start], [target.end, node.end]);
        dropped += 1;
      } else if (
        start &&
        target.type === 'FunctionExpression' &&
        (target.id as AnyNode | null)?.name === name
      ) {
        // A named function expression has its own name wherever it stands. Dropped only when it is in
        // parentheses, which stay, and does not start a statement: there a parenthesis could continue
        // the line before it.
        const open = /^__name\(\s*\(\s*$/.exec(code.slice(node.start, target.start));
        const close = /^\s*\)/.exec(code.slice(target.end, node.end));
        let up = entry.up;
        while (up && up.node.start === node.start && up.node.type !== 'ExpressionStatement') up = up.up;
        const startsStatement = up?.node.type === 'ExpressionStatement' && up.node.start === node.start;
        if (open && close && !startsStatement) {
          blanks.push(
            [node.start, node.start + open[0].lastIndexOf('(')],
            [target.end + close[0].length, node.end],
          );
          dropped += 1;
        }
      } else if (start && target.type === 'Identifier' && target.name === name) {
        // A declared function's own name: the call goes and its argument stays (`f;` for a statement
        // of only the call), when the function is declared under that name in the statement list the
        // call stands in, and nothing else in the function around it declares or assigns that name.
        let up = entry.up;
        while (up && TRANSPARENT.has(up.node.type)) up = up.up;
        const owner = up?.node;
        if (owner && STATEMENT_LISTS[owner.type] && functionsIn(owner).has(name)) {
          pending.push({ name, scope: up!.scope!.node, ranges: [start, [target.end, node.end]] });
        }
      }
    }
    for (const child of children(node)) {
      const next: Entry = { node: child, up: entry, scope: entry.scope };
      if (FUNCTIONS.has(child.type)) next.scope = next;
      stack.push(next);
    }
  }
  if (helperBindings > 1) return { code, dropped: 0, kept: calls };
  for (const { name, scope, ranges } of pending) {
    if (assigned.get(scope)?.has(name) || (declarations.get(scope)?.get(name) ?? 0) > 1) continue;
    blanks.push(...ranges);
    dropped += 1;
  }
  blanks.sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [start, end] of blanks) {
    out += code.slice(at, start) + code.slice(start, end).replace(/[^\r\n]/g, ' ');
    at = end;
  }
  out += code.slice(at);
  return { code: out, dropped, kept: calls - dropped };
}
