import { describe, expect, it } from 'vitest';
import {
  decodeServer,
  helloFrame,
  inputFrame,
  pauseFrame,
  resizeFrame,
  resumeFrame,
  terminalUrl,
} from './ttyd-codec';

const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe('ttyd codec', () => {
  it('encodes the handshake and the client commands', () => {
    expect(JSON.parse(helloFrame({ columns: 120, rows: 40 }))).toEqual({
      AuthToken: '',
      columns: 120,
      rows: 40,
    });
    expect(text(inputFrame('ls\r'))).toBe('0ls\r');
    expect(Array.from(inputFrame(new Uint8Array([0xff, 3])))).toEqual([0x30, 0xff, 3]);
    expect(text(resizeFrame({ columns: 80, rows: 24 }))).toBe('1{"columns":80,"rows":24}');
    expect(text(pauseFrame())).toBe('2');
    expect(text(resumeFrame())).toBe('3');
  });

  it('decodes output, title and preferences', () => {
    const out = decodeServer(new TextEncoder().encode('0hi\r\n').buffer);
    expect(out.type).toBe('output');
    if (out.type === 'output') expect(text(out.data)).toBe('hi\r\n');
    expect(decodeServer('1Device shell')).toEqual({ type: 'title', title: 'Device shell' });
    expect(decodeServer('2{"fontSize":14}')).toEqual({
      type: 'preferences',
      preferences: { fontSize: 14 },
    });
    expect(decodeServer('2not json')).toEqual({ type: 'preferences', preferences: {} });
    expect(decodeServer('9?')).toEqual({ type: 'unknown' });
    expect(decodeServer(new Uint8Array(0))).toEqual({ type: 'unknown' });
  });

  it('builds the socket URL on the same origin', () => {
    expect(terminalUrl('serial', { protocol: 'https:', host: 'kvm:8443' })).toBe(
      'wss://kvm:8443/api/terminal/ws?target=serial',
    );
    expect(terminalUrl('device', { protocol: 'http:', host: 'h' })).toBe(
      'ws://h/api/terminal/ws?target=device',
    );
  });
});
