import { defineConfig } from 'vitest/config';

// One runner for the whole suite: unit and route tests beside the code, e2e in Chromium last.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'protocol',
          include: ['protocol/src/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'server',
          include: ['server/src/**/*.test.ts'],
          environment: 'node',
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'fleet',
          include: ['fleet/src/**/*.test.ts'],
          environment: 'node',
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'web',
          include: ['web/src/**/*.test.{ts,tsx}'],
          environment: 'happy-dom',
          // A loaded CI machine (14 on 2 cores) ran a first render past vitest's default 5 s.
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['e2e/**/*.spec.ts'],
          environment: 'node',
          testTimeout: 60_000,
          hookTimeout: 60_000,
          fileParallelism: false,
          maxWorkers: 1,
          // Alone, after every other project: the QEMU guest and Chromium specs time input and
          // frames, and a server test booting its own VM beside them starves both of CPU.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
