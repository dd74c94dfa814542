// KVM_BENCH_CPU=<fraction>: runs a bench as if on a slower machine of the same kind. This
// process (and so every process the bench starts: the server, ffmpeg, QEMU, Chromium) goes into
// a cgroup of its own whose CPU quota is that fraction of the machine, in 10 ms periods, so that
// the slowdown is spread finely instead of in 100 ms stalls. The cgroup goes when the process
// exits, or at the next run while its last processes wait to be reaped. Linux cgroup v1 (`cpu`
// controller) or v2 (`cpu.max`); root needed.
import { availableParallelism } from 'node:os';
import { existsSync, mkdirSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const PERIOD_US = 10_000;

/** Where this machine's CPU controller lives, with the names of its files; null if nowhere. */
function controller() {
  if (existsSync('/sys/fs/cgroup/cpu/cpu.cfs_quota_us'))
    return { root: '/sys/fs/cgroup/cpu', v2: false };
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) return { root: '/sys/fs/cgroup', v2: true };
  return null;
}

/** Limits this process and its future children to `fraction` of the machine's CPU. */
export function limitCpu(text) {
  const fraction = Number(text);
  if (!(fraction > 0 && fraction <= 1)) {
    console.error(`KVM_BENCH_CPU must be a fraction of the machine in (0, 1], got "${text}"`);
    process.exit(2);
  }
  const c = controller();
  if (!c) {
    console.error('KVM_BENCH_CPU: no cgroup CPU controller on this machine');
    process.exit(2);
  }
  // An earlier run's cgroup stays while its exited processes wait to be reaped (EBUSY): gone
  // by now, most likely.
  for (const old of readdirSync(c.root).filter((n) => n.startsWith('kvm-bench-'))) {
    try {
      rmdirSync(join(c.root, old));
    } catch {
      // still busy, or a run going on beside this one: left alone
    }
  }
  const dir = join(c.root, `kvm-bench-${process.pid}`);
  const quota = Math.round(fraction * availableParallelism() * PERIOD_US);
  try {
    if (c.v2) {
      writeFileSync(join(c.root, 'cgroup.subtree_control'), '+cpu');
      mkdirSync(dir);
      writeFileSync(join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
    } else {
      mkdirSync(dir);
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
    }
    writeFileSync(join(dir, 'cgroup.procs'), String(process.pid));
    // For the bench's JSON (bench/lib.ts runMarks): the limit it ran under, once it is in force.
    process.env.KVM_BENCH_CPU_APPLIED = String(fraction);
  } catch (err) {
    console.error(`KVM_BENCH_CPU: cannot make the cgroup ${dir}: ${err.message}`);
    process.exit(2);
  }
  process.on('exit', () => {
    try {
      writeFileSync(join(c.root, 'cgroup.procs'), String(process.pid));
      // What the bench started (Chromium's helpers, a daemon) may take a moment to end, and
      // the kernel refuses the rmdir (EBUSY) until the last of them has been reaped.
      const until = Date.now() + 3_000;
      for (;;) {
        try {
          rmdirSync(dir);
          break;
        } catch (err) {
          if (err.code !== 'EBUSY' || Date.now() > until) throw err;
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
        }
      }
    } catch (err) {
      // A process the bench started is not reaped yet: the next run removes the cgroup.
      console.error(`KVM_BENCH_CPU: ${dir} left for the next run to remove: ${err.message}`);
    }
  });
}
