import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { dropNameWrappers } from './drop-name-wrappers.js';

// esbuild's helper, as its bundles define it.
const HELPER =
  'var __defProp=Object.defineProperty;var __name=(target,value)=>__defProp(target,"name",{value,configurable:!0});';

/** Runs `body` (a module's statements after the helper) and returns what it puts into `out`. */
function run(body: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  runInNewContext(body, { out, Object });
  return out;
}

/** The names of out's functions, as the code leaves them. */
function names(body: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(run(HELPER + body)).map(([key, fn]) => [key, (fn as { name: string }).name]),
  );
}

/** The rewrite of a module holding the helper and `body`, with the body rewritten on its own too. */
function rewrite(body: string) {
  const module = `${HELPER}export {};${body}`;
  const result = dropNameWrappers(module);
  return { ...result, body: result.code.slice(HELPER.length + 'export {};'.length) };
}

describe('dropNameWrappers', () => {
  it('drops the wrappers where the language gives the same name, and the names stay', () => {
    const body = [
      'const f=__name(()=>1,"f");out.f=f;',
      'let g;g=__name(function(){},"g");out.g=g;',
      'let h;h??=__name(()=>2,"h");out.h=h;',
      'out.o={get:__name(function(){},"get"),"a-b":__name(()=>3,"a-b")};out.get=out.o.get;out.ab=out.o["a-b"];delete out.o;',
      'function d(x=__name(()=>4,"x")){return x}out.x=d();',
      'class C{m=__name(()=>5,"m");static #p=__name(()=>6,"#p");static p(){return C.#p}}out.m=new C().m;out.p=C.p();',
      'function inner(){function k(){}__name(k,"k");return k}__name(inner,"inner");out.k=inner();out.inner=inner;',
      'const r=__name((function pass(){}),"pass");out.pass=r;',
      // Joined into a sequence or returned, as esbuild's minifier leaves them.
      'function seq(){function s(){}return __name(s,"s"),s}out.s=seq();',
      'function ret(){function t(){}return __name(t,"t")}out.t=ret();',
    ].join('\n');
    const { body: rewritten, dropped, kept } = rewrite(body);
    expect(rewritten).not.toContain('__name');
    expect({ dropped, kept }).toEqual({ dropped: 13, kept: 0 });
    expect(names(rewritten)).toEqual(names(body));
    expect(names(rewritten)).toEqual({
      f: 'f',
      g: 'g',
      h: 'h',
      get: 'get',
      ab: 'a-b',
      x: 'x',
      m: 'm',
      p: '#p',
      k: 'k',
      inner: 'inner',
      pass: 'pass',
      s: 's',
      t: 't',
    });
  });

  it('keeps every character where it was: same length, same line breaks', () => {
    const body = 'const f=__name(\n()=>1,\n"f");\nfunction g(){}\n__name(g,"g");out.f=f;out.g=g;';
    const { body: rewritten, dropped } = rewrite(body);
    expect(dropped).toBe(2);
    expect(rewritten).toHaveLength(body.length);
    expect([...rewritten].flatMap((c, i) => (c === '\n' ? [i] : []))).toEqual(
      [...body].flatMap((c, i) => (c === '\n' ? [i] : [])),
    );
    expect(rewritten.replace(/\s+/g, ' ')).toBe('const f= ()=>1 ; function g(){} g ;out.f=f;out.g=g;');
  });

  it('keeps the wrappers that give a name the language would not', () => {
    const body = [
      // esbuild renamed the variable, not the function.
      'const f2=__name(()=>1,"f");out.f2=f2;',
      // A member assignment names nothing.
      'const o={};o.m=__name(function(){},"m");out.m=o.m;',
      // An argument names nothing.
      'out.arg=((fn)=>fn)(__name(()=>2,"arg"));',
      // Parenthesized targets and `__proto__` name nothing.
      'let p;(p)=__name(()=>3,"p");out.p=p;',
      'out.proto=Object.getPrototypeOf({__proto__:__name(function(){},"__proto__")});',
      // A class keeps its wrapper: `let K = class _K {}` is named "_K".
      'let K=class _K{static{__name(this,"K")}};out.K=K;',
      // A declaration renamed by esbuild, and one whose name a destructuring variable also binds.
      'function s2(){}__name(s2,"s");out.s2=s2;',
      'function outer(){function w(){}var {v:[w]}={v:[()=>0]};__name(w,"w");return w}out.w=outer();',
      // Inside something that could bind the name, or not in a statement list of its own.
      'function cat(){function c(){}try{throw ()=>0}catch(c){return __name(c,"c")}}out.c=cat();',
      // A named function expression not in parentheses (bare, it could become a declaration).
      'out.n=__name(function n2(){},"n2");',
    ].join('\n');
    const { body: rewritten, dropped, kept } = rewrite(body);
    expect(rewritten).toBe(body);
    expect({ dropped, kept }).toEqual({ dropped: 0, kept: 10 });
    expect(names(body)).toEqual({
      f2: 'f',
      m: 'm',
      arg: 'arg',
      p: 'p',
      proto: '__proto__',
      K: 'K',
      s2: 's',
      w: 'w',
      c: 'c',
      n: 'n2',
    });
  });

  it('drops a declaration wrapper only where its function is declared in the same list', () => {
    // `k` is declared in the inner block; the wrapper outside it names another binding.
    const body = 'let k=()=>0;{function k(){}}__name(k,"k");out.k=k;';
    const { body: rewritten, kept } = rewrite(body);
    expect(rewritten).toBe(body);
    expect(kept).toBe(1);
    expect(names(body)).toEqual({ k: 'k' });
  });

  it('drops a declaration wrapper when only other functions assign that name', () => {
    // `f` is assigned in `b`, its own `f`, and in a closure of `c`, which can change `c`'s `f`.
    const body = [
      'function a(){function f(){}__name(f,"f");return f}',
      'function b(){let f=1;f=2;return f}',
      'function c(){function f(){}__name(f,"f");(()=>{f=function g(){}})();return f}',
      'out.a=a();out.b=b();out.c=c();',
    ].join('\n');
    const { body: rewritten, dropped, kept } = rewrite(body);
    expect({ dropped, kept }).toEqual({ dropped: 1, kept: 1 });
    expect(rewritten).toContain('function c(){function f(){}__name(f,"f")');
    expect(names(rewritten)).toEqual(names(body));
  });

  it('changes nothing a program does where a name could change, a line could join or a directive move', () => {
    // From a review: inputs unlike esbuild's minified output, each run before and after.
    const cases = {
      nestedVar:
        'function outer(){function f(){}if(out){var f=function g(){}}__name(f,"f");return f}out.r=outer();',
      forVarHead:
        'function outer(){function f(){}for(var f of [function g(){}]);__name(f,"f");return f}out.r=outer();',
      reassign: 'function f(){}f=function g(){};__name(f,"f");out.r=f;',
      returnNewline: 'function o(){function f(){}return __name(\nf,"f")}out.r=o();',
      case2ReturnNewline: 'function o(){return __name(\n(function f(){}),"f")}out.r=o();',
      asiStatement:
        'function o(){let b=(x)=>x;let a;function f(){}a=b\n__name(f,"f");\n(1);return a}out.r=o();',
      asiCase2: 'let b=(x)=>x;let a;a=b\n__name((function f(){}),"f")\nout.r=a;',
      shadowedHelper:
        'function o(__name){const f=__name(()=>1,"f");return f}out.r=o((fn,n)=>{return ()=>2});',
      directive: 'function o(a=1){__name(f,"f");"use strict";function f(){}return f}out.r=o();',
    };
    const outcome = (body: string) => {
      try {
        const out = run(HELPER + body);
        return JSON.stringify(out, (_, v: unknown) => (typeof v === 'function' ? `fn:${v.name}` : v));
      } catch (err) {
        return `throws ${(err as Error).message}`;
      }
    };
    for (const [label, body] of Object.entries(cases)) {
      expect({ label, outcome: outcome(rewrite(body).body) }).toEqual({ label, outcome: outcome(body) });
    }
  });

  it('refuses what does not parse as a module', () => {
    expect(() => dropNameWrappers('const = 1')).toThrow();
  });
});
