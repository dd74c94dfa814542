/** Temporary folders of the server's tests (not shipped). */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A new folder under the system's temporary folder, named `kvm-<what>-...`. Under `npm test` the
 * name carries the run (`KVM_TEST_RUN`, set by scripts/test.mjs), which removes the run's folders
 * when the suite ends: a test that leaves its folder behind (a route test's data folder, a
 * fixture shared by a file's tests) leaves nothing after the run.
 */
export function testTempDir(what: string): Promise<string> {
  const run = process.env.KVM_TEST_RUN;
  return mkdtemp(join(tmpdir(), run ? `kvm-test-${run}-${what}-` : `kvm-${what}-`));
}
