#!/usr/bin/env node
// The whole suite, as `npm test` and CI run it: type-check every workspace, lint, format
// check, then every vitest project (unit, route, e2e in Chromium). Every step runs even after
// a failure, so one run shows everything; the exit code is non-zero if any failed. The last
// line is the runner's summary: `tests: N passed, N failed, N skipped`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const extra = process.argv.slice(2);
const failures = [];

// The folders the server's tests make (server/src/test-temp.ts testTempDir) carry this run's
// name, so the run removes its own when it ends and nobody else's.
const run = `run${process.pid}`;

function step(name, cmd, args) {
  const started = Date.now();
  const r = spawnSync(cmd, args, {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      FORCE_COLOR: process.env.CI ? '0' : process.env.FORCE_COLOR,
      KVM_TEST_RUN: run,
    },
  });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status === 0) console.log(`ok: ${name} (${secs} s)`);
  else {
    console.log(`FAILED: ${name} (exit ${r.status}, ${secs} s)`);
    failures.push(name);
  }
}

const bin = (name) => join(root, 'node_modules', '.bin', name);

if (extra.length === 0) {
  for (const ws of ['protocol', 'server', 'fleet', 'web', 'e2e', 'bench']) {
    step(`typecheck ${ws}`, bin('tsc'), ['-p', `${ws}/tsconfig.json`]);
  }
  step('eslint', bin('eslint'), ['--max-warnings=0', '.']);
  step('prettier', bin('prettier'), ['--check', '--log-level=warn', '.']);
}

mkdirSync(join(root, '.cache'), { recursive: true });
const report = join(root, '.cache', 'vitest-report.json');
step('vitest', bin('vitest'), [
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...extra,
]);

// A folder with something still mounted under it (a test that failed before its unmount) stays:
// a recursive remove would go into the mount.
const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
  .split('\n')
  .map((line) => line.split(' ')[4] ?? '');
let removed = 0;
for (const name of readdirSync(tmpdir())) {
  if (!name.startsWith(`kvm-test-${run}-`)) continue;
  const dir = join(tmpdir(), name);
  if (mounts.some((m) => m === dir || m.startsWith(`${dir}/`))) {
    console.log(`left ${dir}: something is mounted under it`);
    continue;
  }
  try {
    rmSync(dir, { recursive: true, force: true });
    removed += 1;
  } catch (err) {
    console.log(`left ${dir}: ${err.message}`);
  }
}
console.log(`removed ${removed} test data folders`);

let passed = 0;
let failed = 0;
let skipped = 0;
try {
  const json = JSON.parse(readFileSync(report, 'utf8'));
  passed = json.numPassedTests ?? 0;
  failed = json.numFailedTests ?? 0;
  skipped = (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0);
} catch {
  failures.push('vitest report');
}
if (failures.length) console.log(`failed steps: ${failures.join(', ')}`);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failures.length || failed ? 1 : 0);
