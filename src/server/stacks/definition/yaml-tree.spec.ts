import { describe, expect, it } from 'vitest';
import { invalid, service, valid, yamlError } from '../../../../test/support/definitions.js';
import { YAML_LIMITS } from './yaml-tree.js';

describe('validateDefinition: unsafe or broken YAML', () => {
  it('reports a syntax error with its 1-based line and column', () => {
    expect(yamlError('name: s\nservices: [a, b\nstackkit: x\n')).toEqual({
      message: expect.any(String) as string,
      line: 3,
      column: 1,
    });
    expect(yamlError('name: s\n  bad: indent\n')).toMatchObject({ line: 2, column: 6 });
    expect(yamlError('name: "open\n')).toMatchObject({ line: 2 });
  });

  it('refuses duplicate keys, at the second one', () => {
    expect(yamlError('name: a\nstackkit: cloud-kit\nname: b\n')).toEqual({
      message: 'duplicate key "name"',
      line: 3,
      column: 1,
    });
  });

  it('refuses custom and language tags instead of running them', () => {
    expect(yamlError('name: !!js/function "function () { return 1 }"\n')).toEqual({
      message: 'unknown tag !!js/function',
      line: 1,
      column: 7,
    });
    expect(yamlError('services:\n  a: !!python/object:os.system [ls]\n')).toMatchObject({
      message: 'unknown tag !!python/object:os.system',
      line: 2,
      column: 6,
    });
    expect(yamlError('name: !env HOME\n')).toMatchObject({ message: 'unknown tag !env', line: 1, column: 7 });
    expect(yamlError('%TAG !! tag:evil.example,2026:\n---\nname: !!str x\n')).toMatchObject({
      message: '%TAG directives are not supported',
    });
    // The standard tags keep working.
    const result = valid(
      'name: !!str s\nstackkit: cloud-kit\nservices: !!map\n  a: { image: x, ports: [!!int "8080"] }\n',
    );
    expect(service(result, 'a').ports[0].host).toBe(8080);
  });

  it('stops an alias bomb at the expansion bound, without expanding it', () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let level = 1; level < 9; level++) {
      const prev = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    const error = yamlError(lines.join('\n'));
    expect(error.message).toBe(`aliases expand the document beyond ${YAML_LIMITS.maxNodes} nodes`);
    // Line 6 (`f`) stands for ~9^6 nodes: the bound is crossed among its aliases, long before line 9.
    expect(error.line).toBe(6);
  });

  it('refuses aliases of unknown anchors and nesting deeper than the bound', () => {
    expect(yamlError('name: *nowhere\n')).toEqual({ message: 'unknown alias *nowhere', line: 1, column: 7 });
    const deep = `x: ${'['.repeat(YAML_LIMITS.maxDepth + 1)}${']'.repeat(YAML_LIMITS.maxDepth + 1)}\n`;
    expect(yamlError(deep).message).toMatch(/depth|nesting/i);
    // An alias may not take a deep anchor deeper.
    const nested = `a: &a ${'['.repeat(40)}${']'.repeat(40)}\nb: ${'['.repeat(30)}*a${']'.repeat(30)}\n`;
    expect(yamlError(nested).message).toBe(`the alias nests deeper than ${YAML_LIMITS.maxDepth} levels`);
  });

  it('counts lines and columns the way an editor shows them (CRLF, byte-order mark)', () => {
    const crlf = invalid('name: s\r\nstackkit: nope\r\nservices:\r\n  a: { image: x }\r\n');
    expect(crlf.errors.map((e) => [e.path, e.line, e.column])).toEqual([['stackkit', 2, 11]]);
    const bom = invalid('\uFEFFname: Shop\nstackkit: cloud-kit\nservices:\n  a: { image: x }\n');
    expect(bom.errors.map((e) => [e.path, e.line, e.column])).toEqual([['name', 1, 7]]);
  });

  it('refuses a source longer than the size bound', () => {
    const error = yamlError(`name: s\n# ${'x'.repeat(YAML_LIMITS.maxChars)}\n`);
    expect(error).toEqual({
      message: `the document is larger than ${YAML_LIMITS.maxChars} characters`,
      line: 1,
      column: 1,
    });
  });

  it('refuses more than one document', () => {
    expect(yamlError('name: a\n---\nname: b\n')).toEqual({
      message: 'a stack definition is a single YAML document; remove the second one',
      line: 3,
      column: 1,
    });
  });
});
