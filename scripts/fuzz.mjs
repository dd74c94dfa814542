#!/usr/bin/env node
// `npm run fuzz -- --minutes N [--seed S]`: the long fuzz run against the real server process
// (server/src/fuzz/cli.ts).
import { runBundled } from './run-bundled.mjs';

await runBundled({
  entry: 'server/src/fuzz/cli.ts',
  folder: 'fuzz',
  args: process.argv.slice(2),
  skipBootstrap: Boolean(process.env.KVM_FUZZ_NO_BOOTSTRAP),
});
