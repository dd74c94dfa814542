import { describe, expect, it } from 'vitest';
import { h264Codec, mediaSocketUrl, parseMediaFrame } from './h264-direct';

describe('parseMediaFrame', () => {
  it('splits [0x01][key][access unit]', () => {
    const key = parseMediaFrame(new Uint8Array([1, 1, 0, 0, 0, 1, 0x27]));
    expect(key).toEqual({ kind: 'video', key: true, data: new Uint8Array([0, 0, 0, 1, 0x27]) });
    const delta = parseMediaFrame(new Uint8Array([1, 0, 0, 0, 0, 1, 0x21]).buffer);
    expect(delta).toMatchObject({ kind: 'video', key: false });
  });

  it('reads the capture time of [0x02][key][float64 BE][access unit]', () => {
    const bytes = new Uint8Array(13);
    bytes.set([2, 1]);
    new DataView(bytes.buffer).setFloat64(2, 1_764_408_000_123.25);
    bytes.set([0, 0, 1], 10);
    expect(parseMediaFrame(bytes)).toEqual({
      kind: 'video',
      key: true,
      data: new Uint8Array([0, 0, 1]),
      capturedAt: 1_764_408_000_123.25,
    });
  });

  it('knows the pong and ignores the rest', () => {
    expect(parseMediaFrame(new Uint8Array([0xff]))).toEqual({ kind: 'pong' });
    expect(parseMediaFrame(new Uint8Array([0xff, 0]))).toBeNull();
    expect(parseMediaFrame(new Uint8Array([0x01, 0x01]))).toBeNull(); // no payload
    expect(parseMediaFrame(new Uint8Array([0x02, 1, 2, 3]))).toBeNull();
    expect(parseMediaFrame(new Uint8Array([]))).toBeNull();
  });

  it('makes the codec string from the profile-level-id', () => {
    expect(h264Codec('42E01F')).toBe('avc1.42e01f');
    expect(h264Codec(undefined)).toBe('avc1.42e01f');
    expect(h264Codec('bogus')).toBe('avc1.42e01f');
    expect(h264Codec('640028')).toBe('avc1.640028');
  });

  it('builds the socket URL with the token', () => {
    expect(mediaSocketUrl({ protocol: 'https:', host: 'kvm' }, 'tok')).toBe(
      'wss://kvm/api/media/ws?auth_token=tok',
    );
  });
});
