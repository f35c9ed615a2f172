// @ts-check
import js from '@eslint/js';
import { dirname, relative, resolve, sep } from 'node:path';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'data/**',
      'bench/**',
      'test/fixtures/**',
      'eslint.config.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      eqeqeq: ['error', 'always'],
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // The three programs (docs/architecture.md): src/server, src/agent and src/cli each import their
  // own folder and src/contracts only; src/contracts imports only itself, and its api/ holds types.
  {
    files: ['src/**/*.ts'],
    plugins: { layout: { rules: { 'program-imports': programImports() } } },
    rules: { 'layout/program-imports': 'error' },
  },
  ...contractsBoundary(),
  // Node scripts outside the TypeScript project (scripts/*.mjs, and the loader hooks the tests
  // preload into a service: test/support/*.mjs): linted without type information.
  {
    files: ['scripts/**/*.mjs', 'test/support/**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
  {
    files: ['**/*.spec.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
);

/** What each top folder of src/ may import, by resolved path rather than by counting `../`. */
const PROGRAM_IMPORTS = {
  server: ['server', 'contracts'],
  agent: ['agent', 'contracts'],
  cli: ['cli', 'contracts'],
  contracts: ['contracts'],
};

function programImports() {
  const src = resolve(import.meta.dirname, 'src');
  return {
    meta: { type: 'problem', schema: [] },
    create(context) {
      const file = context.filename;
      const program = relative(src, file).split(sep)[0];
      const allowed = PROGRAM_IMPORTS[program];
      if (!allowed) return {};
      const check = (node, source) => {
        if (typeof source !== 'string' || !source.startsWith('.')) return;
        const target = relative(src, resolve(dirname(file), source));
        if (target.startsWith('..')) {
          // Specs may use the test harness; shipped code never reaches outside src/.
          if (!file.endsWith('.spec.ts'))
            context.report({ node, message: `src/${program} imports nothing outside src/ (${source}).` });
          return;
        }
        const top = target.split(sep)[0];
        if (!allowed.includes(top))
          context.report({
            node,
            message: `src/${program} may import only ${allowed.map((a) => `src/${a}`).join(' and ')}, not src/${top}.`,
          });
      };
      return {
        ImportDeclaration: (node) => check(node, node.source.value),
        ExportNamedDeclaration: (node) => node.source && check(node, node.source.value),
        ExportAllDeclaration: (node) => check(node, node.source.value),
        ImportExpression: (node) => node.source.type === 'Literal' && check(node, node.source.value),
      };
    },
  };
}

/**
 * src/contracts: the HTTP API's shapes, which the service, stackctl and the agent (and later other
 * clients) share. Types only (no values, so importing them costs nothing at run time) and no import
 * from outside src/contracts: no package, no node: module, no other source folder.
 */
function contractsBoundary() {
  const typesOnly = 'src/contracts/api holds types only: interfaces, type aliases and type imports/exports.';
  return [{ files: ['src/contracts/api/*.ts'], depth: 2 }].map(({ files, depth }) => ({
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(?!\\.{1,2}/)|^(\\.\\./){${depth}}`,
              message: 'src/contracts imports nothing outside src/contracts.',
            },
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        ...[
          'ImportDeclaration[importKind="value"]',
          'ExportNamedDeclaration[exportKind="value"]',
          'ExportAllDeclaration[exportKind="value"]',
          'ExportDefaultDeclaration',
          'VariableDeclaration',
          'FunctionDeclaration',
          'ClassDeclaration',
          'TSEnumDeclaration',
          'TSModuleDeclaration',
          'ExpressionStatement',
        ].map((selector) => ({ selector, message: typesOnly })),
      ],
    },
  }));
}
