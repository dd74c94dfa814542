// One flat config for every workspace. Layer rules: web never imports server; protocol never
// imports node:* or touches the DOM (house-style.md, Tooling).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';

/** What only the server's top layer (HTTP, sockets, routes, app) may import. */
const SERVER_UPPER_LAYERS = [
  'fastify',
  '@fastify/*',
  '**/routes/**',
  '**/http/**',
  '**/janus/**',
  '**/app',
];

/** A driver's implementation or a platform: anything of drivers/ but the interfaces. */
const DRIVER_INTERNALS = '(^|/)(platform/|drivers/(?!([a-z-]+/)?types$|choices$))';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '.data/**', '.cache/**', '.install/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: [
      'server/**/*.ts',
      'fleet/**/*.ts',
      'e2e/**/*.ts',
      'bench/**/*.ts',
      'scripts/**/*.mjs',
      '*.js',
    ],
    languageOptions: { globals: { ...globals.node } },
  },
  // The server's layers, bottom up: log/errors/config/storage/process, drivers, media,
  // services, then http/ws/janus/routes and app. A layer never imports one above it.
  {
    files: ['server/src/drivers/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: SERVER_UPPER_LAYERS.concat(['**/services/**', '**/media/**']),
              message: 'drivers never import services, media, routes or the HTTP layer',
            },
          ],
        },
      ],
    },
  },
  // What a target's drivers share (the QEMU VM, the testbed picture, nmcli, namespaces): the
  // drivers import it, never the other way.
  {
    files: ['server/src/platform/**/*.ts'],
    ignores: ['**/*.test.ts', '**/test-support.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: SERVER_UPPER_LAYERS.concat(['**/services/**', '**/media/**', '**/drivers/**']),
              message: 'a platform never imports drivers, services, media or the HTTP layer',
            },
          ],
        },
      ],
    },
  },
  {
    files: [
      'server/src/{process,storage,install,sync,graphics}/**/*.ts',
      'server/src/log.ts',
      'server/src/errors.ts',
    ],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: SERVER_UPPER_LAYERS.concat([
                '**/services/**',
                '**/media/**',
                '**/drivers/**',
                '**/platform/**',
              ]),
              message: 'the base layer imports nothing above it',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['server/src/{services,media}/**/*.ts'],
    ignores: ['**/*.test.ts', '**/*test-support.ts', '**/*-test-kit.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: SERVER_UPPER_LAYERS,
              message: 'services and media never import Fastify, routes or the HTTP layer',
            },
            {
              // a driver is reached through its interface: drivers/<subsystem>/types
              regex: DRIVER_INTERNALS,
              message: 'services and media import only drivers/<subsystem>/types (the interfaces)',
            },
          ],
        },
      ],
    },
  },
  // Above the services (HTTP, sockets, routes, terminal): drivers only through their
  // interfaces too; the composition root (app.ts, drivers/factory.ts) makes them.
  {
    files: ['server/src/{routes,http,ws,janus,terminal}/**/*.ts'],
    ignores: ['**/*.test.ts', '**/test-support.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: DRIVER_INTERNALS,
              message: 'only the composition root makes drivers; others import drivers/*/types',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['web/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@kvm/server', '@kvm/server/*', '**/server/src/**'],
              message: 'web never imports server',
            },
          ],
        },
      ],
    },
  },
  {
    // The console's lib/ is plain classes under the features (house-style.md, Layout): it
    // imports no feature, app or component, and no React. Feature cycles: app/import-cycles.test.ts.
    files: ['web/src/lib/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@kvm/server', '@kvm/server/*', '**/server/src/**'],
              message: 'web never imports server',
            },
            {
              group: [
                '**/features/**',
                '**/app/**',
                '**/components/**',
                'react',
                'react-dom',
                'antd',
              ],
              message: 'lib/ sits below the features and has no React',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['protocol/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', 'fs', 'path', 'crypto', 'os', 'net'],
              message: 'protocol has no Node imports',
            },
          ],
        },
      ],
      'no-restricted-globals': ['error', 'window', 'document', 'navigator', 'localStorage'],
    },
  },
);
