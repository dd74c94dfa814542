/**
 * Uploads through a real listening server: a multi-GB body streamed to disk in bounded memory,
 * a cut upload, one upload at a time, and a full disk (a small tmpfs) before and during a write.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, open, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { MsdState } from '@kvm/protocol';
import {
  listen,
  msdTestApp,
  postZeros,
  postZerosFromChild,
  type MsdTestApp,
  type RawAnswer,
} from './test-support';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

let t: MsdTestApp;
let base: string;

async function open_(dataDir?: string, uploadIdleMs?: number): Promise<void> {
  t = await msdTestApp(dataDir, uploadIdleMs ? { uploadIdleMs } : {});
  base = await listen(t.app);
}

afterEach(async () => {
  await t?.app.close();
  // a data folder on the tmpfs goes with the next test's cleanup of the mount
  if (t && !t.dataDir.includes('kvm-msd-tmpfs-')) {
    await rm(t.dataDir, { recursive: true, force: true });
  }
});

const images = (): string => join(t.dataDir, 'msd', 'images');

async function state(): Promise<MsdState> {
  const res = await fetch(`${base}/api/msd`, { headers: t.headers });
  return ((await res.json()) as { result: MsdState }).result;
}

async function until<T>(
  what: string,
  fn: () => Promise<T>,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a multi-GB upload', () => {
  it('streams 3 GiB to disk with the RSS growing by less than 30 MB', async () => {
    await open_();
    try {
      // warm up: the first request loads code and grows the heap once
      await postZerosFromChild(t.headers, `${base}/api/msd/write?image=warm.img`, 64 * MiB);
      const size = 3 * GiB;
      const before = process.memoryUsage.rss();
      let peak = before;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage.rss());
      }, 20);
      const started = performance.now();
      let res: RawAnswer;
      try {
        // the client in another process: this process's RSS is the server's
        res = await postZerosFromChild(
          t.headers,
          `${base}/api/msd/write?image=big.img&prefix=disks`,
          size,
        );
      } finally {
        clearInterval(sampler);
      }
      const seconds = (performance.now() - started) / 1000;
      const growthMb = (peak - before) / 1e6;
      console.log(
        `3 GiB upload: ${(size / 1e6 / seconds).toFixed(0)} MB/s, RSS +${growthMb.toFixed(1)} MB`,
      );
      expect(res.status).toBe(200);
      expect(res.json().result).toEqual({
        image: { name: 'disks/big.img', size, written: size },
      });
      expect((await stat(join(images(), 'disks', 'big.img'))).size).toBe(size);
      expect(await readdir(join(images(), 'disks'))).toEqual(['big.img']);
      expect(growthMb).toBeLessThan(30);
    } finally {
      await rm(join(images(), 'disks'), { recursive: true, force: true });
    }
  }, 180_000);
});

describe('a cut upload', () => {
  it.each([
    ['remove_incomplete=1', true],
    ['remove_incomplete=0', false],
  ])('never shows complete (%s)', async (flag, removed) => {
    await open_();
    const res = await postZeros(
      t.headers,
      `${base}/api/msd/write?image=cut.iso&${flag}`,
      64 * MiB,
      {
        cutAfter: 8 * MiB,
      },
    );
    expect(res).toBe('cut');
    // the server notices the cut and ends the transfer
    const s = await until('upload ended', async () => {
      const s = await state();
      return s.storage.uploading === null && !s.busy ? s : null;
    });
    const files = await readdir(images());
    if (removed) {
      expect(files).toEqual([]);
      expect(s.storage.images).toEqual({});
    } else {
      expect(files.sort()).toEqual(['.__cut.iso.incomplete', 'cut.iso']);
      expect(s.storage.images['cut.iso']).toMatchObject({ complete: false });
      expect(s.storage.images['cut.iso']!.size).toBeLessThan(64 * MiB);
    }
    // and the name can be written again (an incomplete one replaced with remove_incomplete)
    const again = await postZeros(
      t.headers,
      `${base}/api/msd/write?image=cut.iso&remove_incomplete=1`,
      MiB,
    );
    expect((again as RawAnswer).status).toBe(200);
    expect((await state()).storage.images['cut.iso']).toMatchObject({ complete: true, size: MiB });
  });

  it('allows one upload at a time (409) and shows its progress', async () => {
    await open_();
    let release!: () => void;
    const first = postZeros(t.headers, `${base}/api/msd/write?image=a.iso`, 16 * MiB, {
      hold: { at: 4 * MiB, until: new Promise<void>((r) => (release = r)) },
    });
    const s = await until('uploading', async () => {
      const s = await state();
      return s.storage.uploading && s.storage.uploading.written >= 4 * MiB ? s : null;
    });
    expect(s.busy).toBe(true);
    expect(s.storage.uploading).toEqual({ name: 'a.iso', size: 16 * MiB, written: 4 * MiB });
    expect(s.storage.images['a.iso']).toMatchObject({ complete: false });
    const second = (await postZeros(
      t.headers,
      `${base}/api/msd/write?image=b.iso`,
      MiB,
    )) as RawAnswer;
    expect(second.status).toBe(409);
    expect(second.json().result.error).toBe('MsdIsBusyError');
    release();
    expect(((await first) as RawAnswer).status).toBe(200);
    const after = await state();
    expect(after.busy).toBe(false);
    expect(after.storage.uploading).toBeNull();
    expect(Object.keys(after.storage.images)).toEqual(['a.iso']);
  });
});

describe('reset', () => {
  it('stops a stalled upload and clears busy', async () => {
    await open_();
    const stalled = postZeros(t.headers, `${base}/api/msd/write?image=stuck.iso`, 16 * MiB, {
      hold: { at: 2 * MiB, until: new Promise<void>(() => undefined) },
    });
    await until('uploading', async () => {
      const up = (await state()).storage.uploading;
      return up !== null && up.written >= 2 * MiB;
    });
    const res = await fetch(`${base}/api/msd/reset`, { method: 'POST', headers: t.headers });
    expect(res.status).toBe(200);
    const s = await until('reset', async () => {
      const s = await state();
      return !s.busy && s.storage.uploading === null ? s : null;
    });
    // the client's connection was dropped; the partial image stays incomplete
    expect(s.storage.images['stuck.iso']).toMatchObject({ complete: false });
    const answer = await Promise.race([
      stalled.catch((err: Error) => err.message),
      new Promise((r) => setTimeout(() => r('open'), 2000)),
    ]);
    expect(answer).not.toBe('open');
  });
});

describe('a silent client', () => {
  it('ends its upload after the idle time, freeing the region', async () => {
    await open_(undefined, 300);
    const silent = postZeros(
      t.headers,
      `${base}/api/msd/write?image=idle.iso&remove_incomplete=1`,
      8 * MiB,
      {
        hold: { at: MiB, until: new Promise<void>(() => undefined) },
      },
    ).catch((err: Error) => err.message);
    await until('uploading', async () => (await state()).storage.uploading !== null);
    const s = await until(
      'idle end',
      async () => {
        const s = await state();
        return s.storage.uploading === null && !s.busy ? s : null;
      },
      5000,
    );
    expect(s.storage.images).toEqual({});
    expect(await readdir(images())).toEqual([]);
    const answer = await silent;
    if (typeof answer !== 'string') expect(answer.status).toBe(400);
  });
});

describe('a full disk', () => {
  let mnt: string | null = null;
  let skipReason = '';

  beforeAll(async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kvm-msd-tmpfs-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dir], { stdio: 'pipe' });
      mnt = dir;
    } catch (err) {
      skipReason = `cannot mount a tmpfs (${(err as Error).message.split('\n')[0]})`;
      await rm(dir, { recursive: true, force: true });
    }
  });

  afterAll(async () => {
    if (!mnt) return;
    execFileSync('umount', [mnt]);
    await rm(mnt, { recursive: true, force: true });
  });

  async function freshData(ctx: { skip: (note?: string) => void }): Promise<string> {
    if (!mnt) ctx.skip(skipReason);
    for (const e of await readdir(mnt!)) await rm(join(mnt!, e), { recursive: true, force: true });
    const data = join(mnt!, 'data');
    await mkdir(data);
    return data;
  }

  it('refuses a Content-Length over the free space with 507', async (ctx) => {
    await open_(await freshData(ctx));
    const res = (await postZeros(
      t.headers,
      `${base}/api/msd/write?image=big.iso`,
      9 * MiB,
    )) as RawAnswer;
    expect(res.status).toBe(507);
    expect(res.json().result.error).toBe('MsdNoSpaceError');
    expect(await readdir(images())).toEqual([]);
  });

  it('answers 507 when the disk fills up mid-write, leaving nothing half-written', async (ctx) => {
    const data = await freshData(ctx);
    await open_(data);
    let release!: () => void;
    const upload = postZeros(t.headers, `${base}/api/msd/write?image=isos/x.iso`, 6 * MiB, {
      hold: { at: MiB, until: new Promise<void>((r) => (release = r)) },
    });
    await until('first MiB written', async () => {
      const up = (await state()).storage.uploading;
      return up !== null && up.written >= MiB;
    });
    // someone else takes the rest of the disk after the free-space check passed
    const filler = await open(join(data, 'filler'), 'w');
    const block = Buffer.alloc(256 * 1024, 1);
    try {
      for (;;) await filler.write(block);
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      await filler.close();
    }
    release();
    const res = (await upload) as RawAnswer;
    expect(res.status).toBe(507);
    expect(res.json().result.error).toBe('MsdNoSpaceError');
    await until('upload ended', async () => (await state()).storage.uploading === null);
    // the partial file and its marker are gone, so is the folder made for them
    expect(await readdir(images())).toEqual([]);
    expect((await state()).storage.images).toEqual({});
    // with room again, the same upload goes through
    await rm(join(data, 'filler'));
    const again = (await postZeros(
      t.headers,
      `${base}/api/msd/write?image=isos/x.iso`,
      6 * MiB,
    )) as RawAnswer;
    expect(again.status).toBe(200);
  });
});
