#!/usr/bin/env node
// `npm run bench -- <name>`: bundles bench/<name>.ts and runs it. Each bench prints one JSON
// object on stdout.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { limitCpu } from './cpu-limit.mjs';
import { root, runBundled } from './run-bundled.mjs';

const name = process.argv[2];
const available = readdirSync(join(root, 'bench'))
  .filter((f) => f.endsWith('.ts') && !f.includes('.test.') && f !== 'lib.ts')
  .map((f) => f.replace(/\.ts$/, ''));
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join('|')}>`);
  process.exit(2);
}
if (process.env.KVM_BENCH_CPU) limitCpu(process.env.KVM_BENCH_CPU);
// Same preparation as `npm test` (quick and silent when everything is built already).
await runBundled({
  entry: `bench/${name}.ts`,
  folder: 'bench',
  args: process.argv.slice(3),
  skipBootstrap: Boolean(process.env.KVM_BENCH_NO_BOOTSTRAP),
});
