import { describe, expect, it } from 'vitest';
import { WALL_MAX_WATCH } from '@kvm/protocol/fleet';
import { FakeWebSocket } from '../../test/fake-websocket';
import { WallClient, parseWallPicture } from './wall-client';

/** A picture frame as the fleet sends it: u8 id length, the id, the JPEG. */
function picture(id: string, jpeg: number[]): ArrayBuffer {
  const bytes = new Uint8Array(1 + id.length + jpeg.length);
  bytes[0] = id.length;
  for (let i = 0; i < id.length; i += 1) bytes[1 + i] = id.charCodeAt(i);
  bytes.set(jpeg, 1 + id.length);
  return bytes.buffer;
}

function setup() {
  FakeWebSocket.reset();
  const timers: Array<{ fn: () => void; ms: number }> = [];
  const made: Blob[] = [];
  const revoked: string[] = [];
  const client = new WallClient({
    url: 'wss://fleet.test/cloud-basic/v1/wall/ws',
    socket: (url) => new FakeWebSocket(url),
    createUrl: (blob) => {
      made.push(blob);
      return `blob:${made.length}`;
    },
    revokeUrl: (url) => revoked.push(url),
    random: () => 1,
    setTimer: (fn, ms) => {
      timers.push({ fn, ms });
      return timers.length;
    },
    clearTimer: () => undefined,
  });
  const frames = (ws: FakeWebSocket) =>
    ws.sent.filter((d): d is string => typeof d === 'string').map((d) => JSON.parse(d) as unknown);
  return { client, timers, made, revoked, frames };
}

describe('WallClient', () => {
  it('parses the binary picture frame and refuses short ones', () => {
    const p = parseWallPicture(picture('dev1', [0xff, 0xd8, 0xff]));
    expect(p?.id).toBe('dev1');
    expect([...(p?.jpeg ?? [])]).toEqual([0xff, 0xd8, 0xff]);
    expect(parseWallPicture(new Uint8Array([5, 65, 66]).buffer)).toBeNull();
    expect(parseWallPicture(new Uint8Array([0]).buffer)).toBeNull();
    expect(parseWallPicture(new ArrayBuffer(0))).toBeNull();
  });

  it('sends watch with the ids on screen, pause when hidden and resume when visible', () => {
    const { client, frames } = setup();
    client.watch(['a', 'b']); // before the socket is open: kept, sent on open
    client.start();
    const ws = FakeWebSocket.last();
    expect(ws.url).toBe('wss://fleet.test/cloud-basic/v1/wall/ws');
    expect(ws.binaryType).toBe('arraybuffer');
    ws.open();
    expect(client.getState()).toBe('open');
    expect(frames(ws)).toEqual([{ t: 'watch', ids: ['a', 'b'] }]);
    client.watch(['b', 'c', 'c']);
    client.setVisible(false);
    client.setVisible(false); // no second pause
    client.setVisible(true);
    expect(frames(ws).slice(1)).toEqual([
      { t: 'watch', ids: ['b', 'c'] },
      { t: 'pause' },
      { t: 'resume' },
    ]);
  });

  it(`watches at most ${WALL_MAX_WATCH} tiles`, () => {
    const { client, frames } = setup();
    client.start();
    FakeWebSocket.last().open();
    client.watch(Array.from({ length: WALL_MAX_WATCH + 50 }, (_, i) => `d${i}`));
    const last = frames(FakeWebSocket.last()).at(-1) as { ids: string[] };
    expect(last.ids).toHaveLength(WALL_MAX_WATCH);
  });

  it('keeps state frames, shows each picture by an object URL and revokes the previous one', () => {
    const { client, made, revoked } = setup();
    let updates = 0;
    client.subscribe(() => (updates += 1));
    client.start();
    const ws = FakeWebSocket.last();
    ws.open();
    ws.receive(JSON.stringify({ t: 'state', id: 'dev1', online: true, signal: true, at: 1000 }));
    expect(client.tile('dev1')).toEqual({ online: true, signal: true, at: 1000, url: null });
    ws.receive(picture('dev1', [1, 2, 3]));
    expect(client.tile('dev1')?.url).toBe('blob:1');
    expect(made[0]?.type).toBe('image/jpeg');
    expect(made[0]?.size).toBe(3);
    ws.receive(picture('dev1', [4, 5]));
    expect(client.tile('dev1')?.url).toBe('blob:2');
    expect(revoked).toEqual(['blob:1']);
    // a state frame keeps the picture; "no signal" is online without a signal
    ws.receive(JSON.stringify({ t: 'state', id: 'dev1', online: true, signal: false, at: 2000 }));
    expect(client.tile('dev1')).toMatchObject({ signal: false, url: 'blob:2' });
    ws.receive('not json');
    ws.receive(new Uint8Array([9, 1]).buffer);
    expect(updates).toBeGreaterThan(3);
    client.stop();
    expect(revoked).toEqual(['blob:1', 'blob:2']);
    expect(client.tile('dev1')).toBeUndefined();
    expect(ws.closed).toBe(true);
  });

  it('reconnects with growing backoff and sends the watch list and pause again', () => {
    const { client, timers, frames } = setup();
    client.watch(['x']);
    client.setVisible(false);
    client.start();
    FakeWebSocket.last().serverClose(1006);
    expect(client.getState()).toBe('closed');
    expect(timers.at(-1)?.ms).toBe(500);
    timers.at(-1)?.fn();
    FakeWebSocket.last().serverClose(1006);
    expect(timers.at(-1)?.ms).toBe(1000);
    timers.at(-1)?.fn();
    const ws = FakeWebSocket.last();
    ws.open();
    expect(frames(ws)).toEqual([{ t: 'watch', ids: ['x'] }, { t: 'pause' }]);
    ws.serverClose(1006);
    expect(timers.at(-1)?.ms).toBe(500); // an open socket resets the backoff
    expect(FakeWebSocket.instances).toHaveLength(3);
  });

  it('stop() ends the socket and no reconnect follows', () => {
    const { client, timers } = setup();
    client.start();
    const ws = FakeWebSocket.last();
    ws.open();
    client.stop();
    expect(client.getState()).toBe('stopped');
    ws.serverClose(1001);
    expect(timers).toHaveLength(0);
    expect(FakeWebSocket.instances).toHaveLength(1);
    // shown again: a new socket
    client.start();
    expect(client.getState()).toBe('connecting');
    expect(FakeWebSocket.instances).toHaveLength(2);
  });
});
