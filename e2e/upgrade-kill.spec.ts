/**
 * kill -9 at any point of an upgrade leaves a bootable device (issue 12 item 4): the launcher
 * and its server are frozen and killed together (a power cut, as far as the files can tell) at
 * moments from the unpack to after the new version is kept; the launcher is started again over
 * the same data and install folders, and each time a version answers, the upgrade settles
 * (no trial left), and the version answering is the one `current` names.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initDevice } from './fixtures/console';
import { REPO_ROOT, ServerProcess } from './fixtures/server';

let work = '';
let server: ServerProcess;
let pkgFile = '';
let cookie = '';
const install = () => join(work, 'install');

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'kvm-e2e-upgrade-kill-'));
  const script = join(REPO_ROOT, 'scripts', 'package.mjs');
  execFileSync(process.execPath, [script, '--gen-key', join(work, 'k')]);
  pkgFile = execFileSync(
    process.execPath,
    [
      ...[script, '--version', 'V77.0.0', '--key', join(work, 'k.key')],
      ...['--from', REPO_ROOT, '--out', work],
    ],
    { encoding: 'utf8' },
  ).split(' ')[0]!;
  server = await ServerProcess.start({
    installDir: install(),
    config: `upgrade:\n  trusted_keys: [${join(work, 'k.pub')}]\n`,
  });
  await initDevice(server);
  const res = await fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    body: new URLSearchParams({ user: 'admin', passwd: 'e2e-secret' }),
  });
  cookie = `auth_token=${((await res.json()) as { result: { token: string } }).result.token}`;
}, 120_000);

afterAll(async () => {
  await server?.dispose();
  if (work) await rm(work, { recursive: true, force: true });
});

async function api(path: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}${path}`, {
    ...init,
    headers: { cookie },
    signal: AbortSignal.timeout(5000),
  });
  return ((await res.json()) as { result: Record<string, unknown> }).result;
}

/** Freezes the launcher, kills its server and then it: neither can write another byte. */
async function powerCut(): Promise<void> {
  const launcher = server.pid!;
  process.kill(launcher, 'SIGSTOP');
  const children = readFileSync(`/proc/${launcher}/task/${launcher}/children`, 'utf8')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number);
  for (const pid of children) process.kill(pid, 'SIGKILL');
  await server.kill('SIGKILL');
  // the server is dead (gone, or a zombie nobody reaped yet) before the next one binds the port
  for (const pid of children) {
    await expect
      .poll(
        () =>
          readFile(`/proc/${pid}/stat`, 'utf8').then(
            (stat) => / Z /.test(stat),
            () => true,
          ),
        { timeout: 10_000 },
      )
      .toBe(true);
  }
}

/** What the cut left in the install folder, for the log: which step it interrupted. */
function cutState(): string {
  const names = readdirSync(install());
  const slots = names.includes('slots') ? readdirSync(join(install(), 'slots')) : [];
  let trial = 'no trial';
  try {
    const t = JSON.parse(readFileSync(join(install(), 'trial.json'), 'utf8')) as {
      attempts: number;
    };
    trial = `trial attempts ${t.attempts}`;
  } catch {
    // none
  }
  let current = 'factory';
  try {
    current = readlinkSync(join(install(), 'current'));
  } catch {
    // none
  }
  return `${trial}, current ${current}, slots ${slots.join(' ') || '-'}`;
}

/** The version `current` names (package.json of the slot, or the checkout's). */
function currentVersion(): string {
  let root = REPO_ROOT;
  try {
    root = join(install(), readlinkSync(join(install(), 'current')));
  } catch {
    // no pointer: the factory tree
  }
  const v = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string })
    .version;
  return `V${v}`;
}

describe('an upgrade cut by kill -9', () => {
  // ms after POST start was sent (its answer comes after the unpack, ~0.1-0.3 s; the server
  // stops 1 s after answering; the new one is ready some 0.3 s later)
  for (const delay of [30, 600, 1150, 1400, 1700, 4000]) {
    it(`at ${delay} ms still boots, and settles`, async () => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(await readFile(pkgFile))]), 'update.pkg');
      await fetch(`${server.url}/api/upgrade/upload`, {
        method: 'POST',
        headers: { cookie },
        body: form,
      });
      const started = fetch(`${server.url}/api/upgrade/start`, {
        method: 'POST',
        headers: { cookie },
      }).catch(() => null);
      await new Promise((r) => setTimeout(r, delay));
      await powerCut();
      await started;
      console.log(`cut at ${delay} ms: ${cutState()}`);
      await server.launch();
      await expect
        .poll(async () => (await api('/api/upgrade/status').catch(() => null))?.['in_progress'], {
          timeout: 60_000,
        })
        .toBe(false);
      const { version } = (await api('/api/upgrade/version')) as { version: string };
      expect(version).toBe(currentVersion());
      // no half-unpacked slot is left for long: the next start clears it first (a cut before
      // the install made its slots folder leaves none at all)
      const slots = join(install(), 'slots');
      const left = existsSync(slots) ? readdirSync(slots) : [];
      expect(left.every((n) => /^[ab](\.new)?$/.test(n))).toBe(true);
    }, 120_000);
  }
});
