// Progress lines and commands of scripts/build-guest.mjs and its scripts/guest/ modules.
import { spawnSync } from 'node:child_process';

const quiet = process.argv.includes('--quiet');

export function log(msg) {
  if (!quiet) console.log(`build-guest: ${msg}`);
}

export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts });
  if (r.error) throw new Error(`${cmd}: ${r.error.message}`);
  if (r.status !== 0) {
    throw new Error(`'${cmd} ${args.join(' ')}' failed (exit ${r.status}): ${r.stderr ?? ''}`);
  }
  return r.stdout ?? '';
}
