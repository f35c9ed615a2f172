import { describe, expect, it } from 'vitest';
import { Issues } from '../definition/issues.js';
import { parseYamlTree, type YamlMap, type YamlNode, type YamlScalar } from '../definition/yaml-tree.js';
import { INTERPOLATION_LIMITS, interpolateString, interpolateTree } from './interpolate.js';

const VARS = { FOO: 'first', BAR: '', PORT: '8080', SECRET: 's3cr3t-value' };

/** Interpolates one string the way the tree does; undefined when it has an error. */
const sub = (text: string, vars: Record<string, string> = VARS): string | undefined =>
  interpolateString(text, vars).value;

const run = (yaml: string, vars: Record<string, string> = VARS) => {
  const root = parseYamlTree(yaml)!;
  const issues = new Issues();
  const result = interpolateTree(root, vars, issues);
  return { root, issues, ...result };
};

/** The node at a dotted path. */
const at = (node: YamlNode, path: string): YamlNode => {
  let cur = node;
  for (const seg of path.split('.')) {
    if (cur.kind === 'map') cur = cur.entries.get(seg)!.value;
    else if (cur.kind === 'seq') cur = cur.items[Number(seg)];
    else throw new Error(`no ${seg}`);
  }
  return cur;
};
const valueAt = (node: YamlNode, path: string): unknown => (at(node, path) as YamlScalar).value;

describe('interpolateString: the forms compose-go accepts', () => {
  it('substitutes $NAME and ${NAME}', () => {
    expect(sub('This $FOO var')).toBe('This first var');
    expect(sub('This ${FOO} var')).toBe('This first var');
    expect(sub('$FOO-bar')).toBe('first-bar');
    expect(sub('${FOO}${FOO}')).toBe('firstfirst');
    expect(sub('$FOO_X')).toBe(''); // the name is FOO_X, unset
    expect(sub('${PORT}:80')).toBe('8080:80');
  });

  it('takes ${NAME:-default} when unset or empty, ${NAME-default} only when unset', () => {
    expect(sub('ok ${missing:-def}')).toBe('ok def');
    expect(sub('ok ${missing-def}')).toBe('ok def');
    expect(sub('ok ${BAR:-def}')).toBe('ok def');
    expect(sub('ok ${BAR-def}')).toBe('ok ');
    expect(sub('ok ${FOO:-def}')).toBe('ok first');
    expect(sub('ok ${BAR:-/non:-alphanumeric}')).toBe('ok /non:-alphanumeric');
    expect(sub('${UNSET_VAR-myerror?msg}')).toBe('myerror?msg');
  });

  it('takes ${NAME:+alt} when set and not empty, ${NAME+alt} when set', () => {
    expect(sub('ok ${UNSET:+presence}')).toBe('ok ');
    expect(sub('ok ${UNSET+presence}')).toBe('ok ');
    expect(sub('ok ${FOO:+presence}')).toBe('ok presence');
    expect(sub('ok ${FOO+presence}')).toBe('ok presence');
    expect(sub('ok ${BAR+presence}')).toBe('ok presence');
    expect(sub('ok ${BAR:+presence}')).toBe('ok ');
  });

  it('interpolates defaults and alternatives in turn', () => {
    expect(sub('ok ${UNSET-$FOO}')).toBe('ok first');
    expect(sub('ok ${UNSET-${FOO}}')).toBe('ok first');
    expect(sub('ok ${UNSET-${FOO} ${FOO}}')).toBe('ok first first');
    expect(sub('ok ${BAR:-${FOO}}')).toBe('ok first');
    expect(sub('ok ${BAR+$FOO ${FOO:+second}}')).toBe('ok first second');
    expect(sub('+ok ${UNSET:-${BAR-defaultValue}}')).toBe('+ok ');
    expect(sub('${A:-${B:-${C:-deep}}}')).toBe('deep');
    expect(sub('${A:-{"json": true}}')).toBe('{"json": true}');
  });

  it('is not confused by operators in the text around', () => {
    expect(sub('-ok ${BAR:-defaultValue}')).toBe('-ok defaultValue');
    expect(sub(':-ok ${UNSET-defaultValue}')).toBe(':-ok defaultValue');
    expect(sub(':?ok ${BAR-defaultValue}')).toBe(':?ok ');
    expect(sub('?ok ${BAR:-defaultValue}')).toBe('?ok defaultValue');
  });

  it('reads $$ as a literal $ and keeps a $ that starts nothing', () => {
    expect(sub('$${foo}')).toBe('${foo}');
    expect(sub('$$FOO costs $$5')).toBe('$FOO costs $5');
    for (const text of ['a $ string', '^REGEX$', '$}', '$', '$1', 'price: 5$']) expect(sub(text)).toBe(text);
  });

  it('refuses a ${ without a name or a closing brace', () => {
    for (const text of [
      '${',
      '${}',
      '${ }',
      '${ foo}',
      '${foo }',
      '${foo!}',
      '${FOO',
      'x ${A:-${B}',
      '${1A}',
    ])
      expect(interpolateString(text, VARS).problems, text).toEqual([
        { kind: 'invalid', offset: expect.any(Number) },
      ]);
    expect(interpolateString('ok ${', VARS).problems).toEqual([{ kind: 'invalid', offset: 3 }]);
  });

  it('keeps a named mapping (${secret[key]}) as written, as compose-go does without mappings', () => {
    expect(sub('x ${secret[key]} $FOO')).toBe('x ${secret[key]} first');
  });

  it('reports :? and ? when the variable has no value, with the message as written', () => {
    expect(interpolateString('not ok ${UNSET:?Mandatory ${FOO}}', VARS)).toEqual({
      value: undefined,
      problems: [{ kind: 'required', name: 'UNSET', message: 'Mandatory ${FOO}' }],
    });
    expect(interpolateString('${BAR:?empty}', VARS).problems).toEqual([
      { kind: 'required', name: 'BAR', message: 'empty' },
    ]);
    expect(sub('ok ${BAR?err}')).toBe('ok ');
    expect(sub('ok ${FOO:?err}')).toBe('ok first');
    expect(interpolateString('${UNSET?}', VARS).problems).toEqual([
      { kind: 'required', name: 'UNSET', message: '' },
    ]);
    expect(interpolateString('${UNSET_VAR?bar-baz}', VARS).problems).toEqual([
      { kind: 'required', name: 'UNSET_VAR', message: 'bar-baz' },
    ]);
  });

  it('evaluates a default only when it is used', () => {
    expect(interpolateString('${FOO:-${UNSET:?never needed}}', VARS)).toEqual({
      value: 'first',
      problems: [],
    });
    expect(interpolateString('${FOO:-$UNSET}', VARS)).toEqual({ value: 'first', problems: [] });
    expect(interpolateString('${UNSET:-$ALSO_UNSET}', VARS).problems).toEqual([
      { kind: 'unset', name: 'ALSO_UNSET' },
    ]);
  });

  it('collects every name mentioned, used or not', () => {
    const names = new Set<string>();
    interpolateString('$A ${B:-${C}} ${D:+$E} $$F ${secret[G]}', {}, names);
    expect([...names].sort()).toEqual(['A', 'B', 'C', 'D', 'E']);
  });

  it('treats a variable named like an Object property as unset unless given', () => {
    expect(sub('${constructor}${__proto__}${toString}', {})).toBe('');
    expect(sub('${constructor}', { constructor: 'c' })).toBe('c');
  });
});

describe('interpolateTree', () => {
  it('rewrites string values into new string scalars at their old positions', () => {
    const yaml = [
      'services:',
      '  web:',
      '    image: "nginx:${TAG:-1.27}"',
      '    ports:',
      '      - "${PORT}:80"',
      '      - 9090',
      '    environment:',
      '      GREETING: hello $FOO',
      '      DEBUG: true',
      '      EMPTY:',
      '',
    ].join('\n');
    const { root, tree, issues } = run(yaml);
    expect(issues.errors).toEqual([]);
    expect(issues.warnings).toEqual([]);
    const image = at(tree, 'services.web.image') as YamlScalar;
    expect(image).toMatchObject({
      kind: 'scalar',
      value: 'nginx:1.27',
      text: 'nginx:1.27',
      pos: { line: 3, column: 12 },
    });
    expect(at(tree, 'services.web.ports.0')).toMatchObject({
      value: '8080:80',
      text: '8080:80',
      pos: { line: 5, column: 9 },
    });
    expect(valueAt(tree, 'services.web.ports.1')).toBe(9090);
    expect(valueAt(tree, 'services.web.environment.GREETING')).toBe('hello first');
    expect(valueAt(tree, 'services.web.environment.DEBUG')).toBe(true);
    expect(valueAt(tree, 'services.web.environment.EMPTY')).toBe(null);
    // The input is untouched.
    expect(valueAt(root, 'services.web.image')).toBe('nginx:${TAG:-1.27}');
    expect(valueAt(root, 'services.web.ports.0')).toBe('${PORT}:80');
  });

  it('leaves a tree without variables as it is', () => {
    const { root, tree } = run('a: 1\nb: [x, y]\n');
    expect(tree).toBe(root);
  });

  it('never interpolates keys', () => {
    const { tree, issues } = run('services:\n  ${FOO}:\n    labels:\n      $FOO: $FOO\n');
    const services = at(tree, 'services') as YamlMap;
    expect([...services.entries.keys()]).toEqual(['${FOO}']);
    const labels = at(tree, 'services.${FOO}.labels') as YamlMap;
    expect([...labels.entries.keys()]).toEqual(['$FOO']);
    expect(labels.entries.get('$FOO')!.key.value).toBe('$FOO');
    expect(labels.entries.get('$FOO')!.value).toMatchObject({ value: 'first' });
    expect(issues.errors).toEqual([]);
  });

  it('does not touch numbers, booleans or nulls, nor quoted numbers without a $', () => {
    const { tree } = run('a: 0x10\nb: yes\nc: ~\nd: "42"\ne: 1.5\n');
    expect(valueAt(tree, 'a')).toBe(16);
    expect(valueAt(tree, 'b')).toBe('yes');
    expect(valueAt(tree, 'c')).toBe(null);
    expect(valueAt(tree, 'd')).toBe('42');
    expect(valueAt(tree, 'e')).toBe(1.5);
  });

  it('keeps merged maps and lists, interpolating the merged values where they land', () => {
    const yaml = [
      'x-base: &base',
      '  image: app:${TAG:-dev}',
      '  command: [run, $FOO]',
      'services:',
      '  a:',
      '    <<: *base',
      '    hostname: a-$FOO',
      '  b:',
      '    <<: *base',
      '    image: own',
      '',
    ].join('\n');
    const { tree, issues } = run(yaml);
    expect(issues.errors).toEqual([]);
    const a = at(tree, 'services.a') as YamlMap;
    expect([...a.entries.keys()]).toEqual(['hostname', 'image', 'command']);
    expect(valueAt(tree, 'services.a.image')).toBe('app:dev');
    expect(valueAt(tree, 'services.a.command.1')).toBe('first');
    expect(valueAt(tree, 'services.a.hostname')).toBe('a-first');
    expect(valueAt(tree, 'services.b.image')).toBe('own');
    expect(at(tree, 'services.b.command')).toMatchObject({ kind: 'seq' });
    expect(valueAt(tree, 'x-base.image')).toBe('app:dev');
  });

  it('warns about an unset variable once per value, naming it', () => {
    const { tree, issues } = run('services:\n  web:\n    image: $IMG:$IMG-${TAG}\n');
    expect(valueAt(tree, 'services.web.image')).toBe(':-');
    expect(issues.errors).toEqual([]);
    expect(issues.warnings).toEqual([
      {
        path: 'services.web.image',
        category: 'invalid_value',
        message: 'the variable IMG is not set: it is an empty string here',
        line: 3,
        column: 12,
      },
      {
        path: 'services.web.image',
        category: 'invalid_value',
        message: 'the variable TAG is not set: it is an empty string here',
        line: 3,
        column: 12,
      },
    ]);
  });

  it('reports :? as missing_required_field at the scalar, keeping its text', () => {
    const { tree, issues } = run(
      'services:\n  db:\n    environment:\n      - PASSWORD=${DB_PASSWORD:?set the database password}\n',
    );
    expect(issues.errors).toEqual([
      {
        path: 'services.db.environment.0',
        category: 'missing_required_field',
        message: 'required variable DB_PASSWORD is missing a value: set the database password',
        line: 4,
        column: 9,
      },
    ]);
    expect(valueAt(tree, 'services.db.environment.0')).toBe(
      'PASSWORD=${DB_PASSWORD:?set the database password}',
    );
  });

  it('reports a bad ${ as invalid_value at the scalar', () => {
    const { issues } = run('a:\n  b: "ok"\n  c: "x ${oops"\n');
    expect(issues.errors).toEqual([
      {
        path: 'a.c',
        category: 'invalid_value',
        message: expect.stringContaining('invalid interpolation format at character 3') as string,
        line: 3,
        column: 6,
      },
    ]);
  });

  it('never puts a value in a message', () => {
    const yaml = [
      'a: ${SECRET:?needs ${SECRET}}', // set: no error
      'b: ${BAR:?$SECRET}', // empty: error, message as written
      'c: ${SECRET}${UNSET}',
      'd: ${SECRET} ${oops',
      '',
    ].join('\n');
    const { issues } = run(yaml);
    const messages = [...issues.errors, ...issues.warnings].map((i) => i.message);
    expect(messages).toHaveLength(3);
    for (const message of messages) expect(message).not.toContain(VARS.SECRET);
  });

  it('bounds a value at 64 KiB', () => {
    const big = 'x'.repeat(40 * 1024);
    const { tree, issues } = run('a: $BIG$BIG\nb: $BIG\n', { BIG: big });
    expect(issues.errors).toEqual([
      {
        path: 'a',
        category: 'resource_constraint',
        message: `this value is longer than ${INTERPOLATION_LIMITS.maxLength} characters once its variables are put in`,
        line: 1,
        column: 4,
      },
    ]);
    expect(valueAt(tree, 'a')).toBe('$BIG$BIG');
    expect(valueAt(tree, 'b')).toBe(big);
  });

  it('bounds what interpolation adds over the whole tree, aliases included', () => {
    const big = 'x'.repeat(60 * 1024);
    const items = Array.from({ length: 100 }, () => '  - *v').join('\n');
    const { issues } = run(`v: &v $BIG\nl:\n${items}\n`, { BIG: big });
    expect(issues.errors).toHaveLength(1);
    expect(issues.errors[0]).toMatchObject({ category: 'resource_constraint', path: 'l.67' });
  });

  it('returns the names referenced anywhere in the values', () => {
    const { referenced } = run('a: $A\nb: [x, "${B:-$C}"]\nc:\n  d: ${D:?x}\n$KEY: 1\n', { D: 'd' });
    expect([...referenced].sort()).toEqual(['A', 'B', 'C', 'D']);
  });
});
