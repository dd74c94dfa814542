import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UPLOAD_SPEED_DISPLAY_CAP } from '@kvm/protocol/constants';
import {
  checkUpload,
  isDirectory,
  TransferMeter,
  UploadController,
  uploadMsdImage,
  type TransferError,
} from './upload';
import { formatBytes, formatDuration } from './format';
import { FakeXhr } from '../../test/fake-xhr';

function lastXhr(): FakeXhr {
  if (!FakeXhr.last) throw new Error('no request');
  return FakeXhr.last;
}

let clock = 0;
const now = () => clock;

function controller() {
  return new UploadController({ createXhr: () => new FakeXhr(), now });
}

function file(name: string, size: number, type = ''): File {
  return new File([new Uint8Array(size)], name, { type });
}

beforeEach(() => {
  clock = 1_000_000;
  FakeXhr.last = null;
  localStorage.clear();
});
afterEach(() => localStorage.clear());

describe('UploadController', () => {
  it('sends the File itself to /msd/write with the query and token, and tracks progress', async () => {
    localStorage.setItem('auth_token', 'tok');
    const up = controller();
    const image = file('debian.iso', 1000);
    const done = uploadMsdImage(up, image);
    const xhr = lastXhr();
    expect(xhr.method).toBe('POST');
    expect(xhr.url).toBe('/api/msd/write?image=debian.iso&prefix=&remove_incomplete=1');
    expect(xhr.body).toBe(image);
    expect(xhr.headers).toMatchObject({
      Token: 'tok',
      'Content-Type': 'application/octet-stream',
    });
    expect(xhr.timeout).toBe(0);
    expect(up.getSnapshot()).toMatchObject({ phase: 'running', name: 'debian.iso', total: 1000 });

    clock += 1000;
    xhr.progress(250, 1000);
    expect(up.getSnapshot()).toMatchObject({ loaded: 250, percent: 25, speed: 250 });
    expect(up.getSnapshot().remainingS).toBe(3);

    clock += 1000;
    xhr.progress(500, 1000);
    expect(up.getSnapshot()).toMatchObject({ percent: 50, speed: 250, remainingS: 2 });

    xhr.answer(200, {
      ok: true,
      result: { image: { name: 'debian.iso', size: 1000, written: 1000 } },
    });
    await expect(done).resolves.toEqual({
      image: { name: 'debian.iso', size: 1000, written: 1000 },
    });
    expect(up.getSnapshot()).toMatchObject({ phase: 'done', percent: 100, remainingS: 0 });
  });

  it('caps the shown speed at 31457280 B/s and computes the time left from it', () => {
    const up = controller();
    void up.send('/msd/write', file('big.img', 1), { name: 'big.img', total: 1 }).catch(() => {});
    const total = 10 * UPLOAD_SPEED_DISPLAY_CAP;
    clock += 10; // 50 MB "sent" in 10 ms: the socket buffer filling, not the network.
    lastXhr().progress(50_000_000, total);
    const snap = up.getSnapshot();
    expect(snap.speed).toBe(UPLOAD_SPEED_DISPLAY_CAP);
    expect(snap.remainingS).toBeCloseTo((total - 50_000_000) / UPLOAD_SPEED_DISPLAY_CAP, 6);
  });

  it('cancel aborts the request and rejects with "cancelled"', async () => {
    const up = controller();
    const done = uploadMsdImage(up, file('a.iso', 10));
    up.cancel();
    expect(lastXhr().aborted).toBe(true);
    await expect(done).rejects.toMatchObject({ reason: 'cancelled' });
    expect(up.getSnapshot().phase).toBe('cancelled');
    // A new upload may start afterwards.
    const again = uploadMsdImage(up, file('b.iso', 10));
    lastXhr().answer(200, {
      ok: true,
      result: { image: { name: 'b.iso', size: 10, written: 10 } },
    });
    await expect(again).resolves.toBeTruthy();
  });

  it('maps the server errors of SPEC 8', async () => {
    const cases: Array<[number, string, string]> = [
      [400, 'MsdImageExistsError', 'exists'],
      [507, 'MsdNoSpaceError', 'noSpace'],
      [500, 'HttpError', 'failed'],
    ];
    for (const [status, error, reason] of cases) {
      const up = controller();
      const done = uploadMsdImage(up, file('a.iso', 10));
      lastXhr().answer(status, { ok: false, result: { error, error_msg: 'server says' } });
      const err = (await done.catch((e: unknown) => e)) as TransferError;
      expect(err.reason).toBe(reason);
      expect(err.error_msg).toBe('server says');
      expect(up.getSnapshot().phase).toBe('failed');
    }
    const up = controller();
    const done = uploadMsdImage(up, file('a.iso', 10));
    lastXhr().onerror?.(new ProgressEvent('error'));
    await expect(done).rejects.toMatchObject({ reason: 'failed' });
  });

  it('refuses a second upload while one runs', () => {
    const up = controller();
    void uploadMsdImage(up, file('a.iso', 10)).catch(() => {});
    expect(() => uploadMsdImage(up, file('b.iso', 10))).toThrow();
  });

  it('sends a form without forcing its content type', () => {
    const up = controller();
    const form = new FormData();
    form.append('file', file('fw.zip', 5));
    void up.send('/fingerbot/upload', form, { name: 'fw.zip', total: 5 }).catch(() => {});
    expect(lastXhr().headers['Content-Type']).toBeUndefined();
    expect(lastXhr().url).toBe('/api/fingerbot/upload');
  });
});

describe('TransferMeter', () => {
  it('measures over a sliding window', () => {
    const meter = new TransferMeter();
    meter.start(0);
    expect(meter.sample(1000, 100_000, 1000).speed).toBe(1000);
    expect(meter.sample(2000, 100_000, 2000).speed).toBe(1000);
    expect(meter.sample(3000, 100_000, 3000).speed).toBe(1000);
    // Stalled for 4 s: the window only sees the stall and a little before it.
    const stalled = meter.sample(3000, 100_000, 7000);
    expect(stalled.speed).toBe(0);
    expect(stalled.remainingS).toBeNull();
  });
});

describe('checkUpload', () => {
  const base = {
    mode: 'cdrom' as const,
    free: 100,
    existing: new Set(['dup.iso']),
    isDirectory: false,
  };

  it('takes only .iso, .img and .bin in image mounting mode, any file in file sharing mode', () => {
    expect(checkUpload({ name: 'a.iso', size: 1 }, base)).toBeNull();
    expect(checkUpload({ name: 'a.IMG', size: 1 }, base)).toBeNull();
    expect(checkUpload({ name: 'a.bin', size: 1 }, base)).toBeNull();
    expect(checkUpload({ name: 'a.zip', size: 1 }, base)).toBe('type');
    expect(checkUpload({ name: 'a.zip', size: 1 }, { ...base, mode: 'flash' })).toBeNull();
  });

  it('refuses directories, duplicates and files larger than the free space', () => {
    expect(checkUpload({ name: 'folder', size: 0 }, { ...base, isDirectory: true })).toBe(
      'directory',
    );
    expect(checkUpload({ name: 'dup.iso', size: 1 }, base)).toBe('exists');
    expect(checkUpload({ name: 'big.iso', size: 101 }, base)).toBe('noSpace');
    expect(checkUpload({ name: 'fit.iso', size: 100 }, base)).toBeNull();
    expect(checkUpload({ name: 'big.iso', size: 101 }, { ...base, free: null })).toBeNull();
  });
});

describe('isDirectory', () => {
  it('believes the drop entry', async () => {
    expect(await isDirectory(file('x', 0), { isDirectory: true })).toBe(true);
    expect(await isDirectory(file('x', 0), { isDirectory: false })).toBe(false);
  });

  it('probes a type-less File: a folder cannot be read', async () => {
    const folder = {
      name: 'isos',
      size: 0,
      type: '',
      slice: () => ({ arrayBuffer: () => Promise.reject(new DOMException('x', 'NotFoundError')) }),
    } as unknown as File;
    expect(await isDirectory(folder)).toBe(true);
    expect(await isDirectory(file('empty', 0))).toBe(false);
    expect(await isDirectory(file('a.iso', 10))).toBe(false);
    expect(await isDirectory(file('a.iso', 0, 'application/x-iso9660-image'))).toBe(false);
  });
});

describe('format', () => {
  it('formats bytes at 1024 and durations', () => {
    expect(formatBytes(0)).toBe('0 Bytes');
    expect(formatBytes(512)).toBe('512 Bytes');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(UPLOAD_SPEED_DISPLAY_CAP)).toBe('30.0 MB');
    expect(formatBytes(1024 ** 8)).toBe('1.0 YB');
    expect(formatDuration(5)).toBe('0:05');
    expect(formatDuration(65.2)).toBe('1:06');
    expect(formatDuration(3725)).toBe('1:02:05');
  });
});
