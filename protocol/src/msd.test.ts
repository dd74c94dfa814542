import { describe, expect, it } from 'vitest';
import {
  applyMsdEvent,
  checkImageName,
  checkImagePrefix,
  isMountableImage,
  joinImageName,
  lastWriteRemoteRecord,
  sortImagesNewestFirst,
  type MsdState,
} from './msd';

describe('image names', () => {
  it.each([
    'x.iso',
    'isos/x.iso',
    'a/b/c.img',
    'диск 1.iso',
    '镜像.bin',
    'with space & (parens).iso',
    'x..iso',
    'emoji-😀.img',
    'a'.repeat(255),
  ])('accepts %s', (name) => {
    expect(checkImageName(name)).toBeNull();
  });

  it.each([
    ['', /empty/],
    ['.', /starts with '\.'/],
    ['..', /starts with '\.'/],
    ['../x.iso', /starts with '\.'/],
    ['a/../../x.iso', /starts with '\.'/],
    ['.hidden', /starts with '\.'/],
    ['isos/.__x.iso.incomplete', /starts with '\.'/],
    ['/etc/passwd', /absolute/],
    ['a//b.iso', /empty path segment/],
    ['isos/', /empty path segment/],
    ['x\u0000.iso', /control/],
    ['x\n.iso', /control/],
    ['x\u007f.iso', /control/],
    ['x\u0085.iso', /control/],
    ['a\\..\\x.iso', /backslash/],
    ['\ud800.iso', /Unicode/],
    ['a'.repeat(256), /255 bytes/],
    ['я'.repeat(128), /255 bytes/],
    [`${'a/'.repeat(600)}x`, /1024 bytes/],
  ])('refuses %j', (name, reason) => {
    expect(checkImageName(name)).toMatch(reason);
  });

  it('prefixes follow the same rules; empty and one trailing slash are fine', () => {
    expect(checkImagePrefix('')).toBeNull();
    expect(checkImagePrefix('isos/')).toBeNull();
    expect(checkImagePrefix('isos/linux')).toBeNull();
    expect(checkImagePrefix('..')).toMatch(/prefix/);
    expect(checkImagePrefix('/tmp')).toMatch(/absolute/);
    expect(checkImagePrefix('a/../..')).toMatch(/starts with/);
  });

  it('joins prefix and image like kvmd', () => {
    expect(joinImageName('', 'x.iso')).toEqual({ ok: true, name: 'x.iso' });
    expect(joinImageName('isos/', 'x.iso')).toEqual({ ok: true, name: 'isos/x.iso' });
    expect(joinImageName('isos', 'sub/x.iso')).toEqual({ ok: true, name: 'isos/sub/x.iso' });
    expect(joinImageName('..', 'x.iso').ok).toBe(false);
    expect(joinImageName('isos', '../x.iso').ok).toBe(false);
  });
});

describe('lists and records', () => {
  it('keeps mountable names by extension, any case', () => {
    expect(['a.iso', 'b.IMG', 'c.Bin', 'd.txt', 'iso'].filter(isMountableImage)).toEqual([
      'a.iso',
      'b.IMG',
      'c.Bin',
    ]);
  });

  it('sorts images newest first, then by name', () => {
    const info = (mod_ts: number) => ({ complete: true, removable: true, size: 1, mod_ts });
    const sorted = sortImagesNewestFirst({ a: info(1), c: info(3), b: info(3), d: info(2) });
    expect(Object.keys(sorted)).toEqual(['b', 'c', 'd', 'a']);
    expect(
      Object.keys(
        sortImagesNewestFirst([
          ['x', info(1)],
          ['y', info(2)],
        ]),
      ),
    ).toEqual(['y', 'x']);
  });

  it('reads the last whole record of a write_remote body', () => {
    const body =
      '{"ok":true,"result":{"image":{"name":"x","size":2,"written":0}}}\r\n' +
      '{"ok":false,"result":{"error":"ClientPayloadError","error_msg":"cut"}}\r\n' +
      '{"ok":tr';
    expect(lastWriteRemoteRecord(body)).toEqual({
      ok: false,
      result: { error: 'ClientPayloadError', error_msg: 'cut' },
    });
    expect(lastWriteRemoteRecord('')).toBeNull();
  });

  it('applies partial msd events over the last full state', () => {
    const full: MsdState = {
      enabled: true,
      online: true,
      busy: false,
      storage: {
        images: {
          'a.iso': { complete: true, removable: true, writable: false, size: 1, mod_ts: 1 },
        },
        parts: { '': { size: 10, free: 5, writable: true } },
        downloading: null,
        uploading: null,
      },
      drive: { image: null, connected: false, cdrom: true, rw: false },
      drive_partition: { image: null, connected: false, cdrom: false, rw: false },
    };
    const next = applyMsdEvent(full, {
      busy: true,
      storage: { uploading: { name: 'b.iso', size: 4, written: 2 }, images: {} },
    });
    expect(next.busy).toBe(true);
    expect(next.storage.uploading).toEqual({ name: 'b.iso', size: 4, written: 2 });
    // a key present replaces the old value whole
    expect(next.storage.images).toEqual({});
    expect(next.storage.parts).toBe(full.storage.parts);
    expect(next.drive).toBe(full.drive);
    expect(applyMsdEvent(next, full)).toBe(full);
  });
});
