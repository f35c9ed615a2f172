// @ts-check
import js from '@eslint/js';
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
  // The three programs (docs/architecture.md): the agent and stackctl import their own code, the
  // agent protocol, the API contracts and src/shared only, never the service's; the service never
  // imports theirs. src/contracts is types only and imports nothing outside itself.
  ...programBoundaries(),
  ...contractsBoundary(),
  {
    files: ['**/*.spec.ts', 'test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
);

/** no-restricted-imports per folder depth: relative imports may not leave a program's own folder. */
function programBoundaries() {
  const outside = (depth, allowed) => ({
    regex: `^(\\.\\./){${depth}}(?!${allowed.map((a) => `${a}/`).join('|')})[^./]`,
    message:
      'The agent and stackctl import only their own code, src/agent-protocol, src/contracts and src/shared.',
  });
  const shared = ['agent-protocol', 'contracts', 'shared'];
  return [
    { files: ['src/agent/*.ts', 'src/cli/*.ts'], depth: 1 },
    { files: ['src/agent/*/*.ts', 'src/cli/*/*.ts'], depth: 2 },
  ]
    .map(({ files, depth }) => ({
      files,
      rules: { 'no-restricted-imports': ['error', { patterns: [outside(depth, shared)] }] },
    }))
    .concat({
      files: ['src/**/*.ts'],
      ignores: ['src/agent/**', 'src/cli/**'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            patterns: [
              {
                regex: '^(\\.\\./)+(agent|cli)/',
                message: 'The service never imports the agent or stackctl.',
              },
            ],
          },
        ],
      },
    });
}

/**
 * src/contracts: the HTTP API's shapes, which the service, stackctl and the agent (and later other
 * clients) share. Types only (no values, so importing them costs nothing at run time) and no import
 * from outside src/contracts: no package, no node: module, no other source folder.
 */
function contractsBoundary() {
  const typesOnly = 'src/contracts holds types only: interfaces, type aliases and type imports/exports.';
  return [
    { files: ['src/contracts/*.ts'], depth: 1 },
    { files: ['src/contracts/*/*.ts'], depth: 2 },
  ].map(({ files, depth }) => ({
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
