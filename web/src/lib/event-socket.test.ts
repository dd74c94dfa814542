import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeWebSocket } from '../test/fake-websocket';
import {
  EVENT_SOCKET_TRANSITIONS,
  EventSocket,
  eventSocketUrl,
  type EventSocketState,
} from './event-socket';
import { IllegalTransitionError } from '@kvm/protocol/transitions';

function makeSocket(url = 'ws://device/api/ws') {
  return new EventSocket({ url: () => url, createSocket: (u) => new FakeWebSocket(u) });
}

describe('eventSocketUrl', () => {
  it('follows the page protocol and adds the stored token', () => {
    expect(eventSocketUrl({ protocol: 'https:', host: 'kvm.local' }, null)).toBe(
      'wss://kvm.local/api/ws',
    );
    expect(eventSocketUrl({ protocol: 'http:', host: '127.0.0.1:8080' }, 'abc')).toBe(
      'ws://127.0.0.1:8080/api/ws?auth_token=abc',
    );
    expect(eventSocketUrl({ protocol: 'http:', host: 'h' }, 'abc', false)).toBe(
      'ws://h/api/ws?stream=0&auth_token=abc',
    );
  });
});

describe('EventSocket', () => {
  beforeEach(() => FakeWebSocket.reset());

  it('walks idle → connecting → open → closed and uses arraybuffer frames', () => {
    const socket = makeSocket();
    const states: string[] = [];
    socket.subscribeState(() => states.push(socket.getState()));
    expect(socket.getState()).toBe('idle');
    socket.connect();
    const ws = FakeWebSocket.last();
    expect(ws.binaryType).toBe('arraybuffer');
    expect(ws.url).toBe('ws://device/api/ws');
    ws.open();
    ws.serverClose(1006);
    expect(states).toEqual(['connecting', 'open', 'closed']);
  });

  it('sends only while open', () => {
    const socket = makeSocket();
    socket.connect();
    const ws = FakeWebSocket.last();
    expect(socket.send({ event_type: 'ping', event: {} })).toBe(false);
    ws.open();
    expect(socket.send({ event_type: 'ping', event: {} })).toBe(true);
    expect(ws.sentFrames()).toEqual([{ event_type: 'ping', event: {} }]);
    expect(socket.sendBinary(new Uint8Array([0]))).toBe(true);
    expect(ws.sent).toHaveLength(2);
  });

  it('dispatches every frame to the subscribers of its type and to onAny', () => {
    const socket = makeSocket();
    const info = vi.fn();
    const hid = vi.fn();
    const any = vi.fn();
    socket.on('info', info);
    socket.on('hid', hid);
    socket.onAny(any);
    socket.connect();
    const ws = FakeWebSocket.last();
    ws.open();
    ws.receiveFrame('info', { system: { kvmd: { version: '4.82' } } });
    ws.receiveFrame('hid', { online: true });
    ws.receive('not json');
    ws.receive(JSON.stringify({ no_type: 1 }));
    expect(info).toHaveBeenCalledWith({ system: { kvmd: { version: '4.82' } } });
    expect(hid).toHaveBeenCalledWith({ online: true });
    expect(any).toHaveBeenCalledTimes(2);
  });

  it('passes binary frames to onBinary', () => {
    const socket = makeSocket();
    const binary = vi.fn();
    socket.onBinary(binary);
    socket.connect();
    const buffer = new Uint8Array([0xff]).buffer;
    FakeWebSocket.last().receive(buffer);
    expect(binary).toHaveBeenCalledWith(buffer);
  });

  it('keeps subscribers across re-creation and ignores the replaced socket', () => {
    const socket = makeSocket();
    const pong = vi.fn();
    const closed = vi.fn();
    socket.on('pong', pong);
    socket.onClose(closed);
    socket.connect();
    const first = FakeWebSocket.last();
    first.open();
    socket.connect();
    const second = FakeWebSocket.last();
    expect(second).not.toBe(first);
    expect(first.closed).toBe(true);
    first.receiveFrame('pong');
    first.serverClose();
    expect(pong).not.toHaveBeenCalled();
    expect(closed).not.toHaveBeenCalled();
    second.open();
    second.receiveFrame('pong');
    expect(pong).toHaveBeenCalledTimes(1);
  });

  it('reports server closes with their code, but not a deliberate close()', () => {
    const socket = makeSocket();
    const closed = vi.fn();
    socket.onClose(closed);
    socket.connect();
    FakeWebSocket.last().serverClose(4001);
    expect(closed).toHaveBeenCalledWith(4001);
    socket.connect();
    socket.close();
    expect(closed).toHaveBeenCalledTimes(1);
    expect(socket.getState()).toBe('closed');
  });

  it('reads the URL at every connect (a new token is picked up)', () => {
    let token = 'a';
    const socket = new EventSocket({
      url: () => `ws://d/api/ws?auth_token=${token}`,
      createSocket: (u) => new FakeWebSocket(u),
    });
    socket.connect();
    token = 'b';
    socket.connect();
    expect(FakeWebSocket.instances.map((s) => s.url)).toEqual([
      'ws://d/api/ws?auth_token=a',
      'ws://d/api/ws?auth_token=b',
    ]);
  });
});

describe('EventSocket state transitions', () => {
  beforeEach(() => FakeWebSocket.reset());

  function recordMoves(socket: EventSocket, into: Set<string>) {
    let from = socket.getState();
    socket.subscribeState(() => {
      into.add(`${from}->${socket.getState()}`);
      from = socket.getState();
    });
  }

  it('makes every move of EVENT_SOCKET_TRANSITIONS and no other', () => {
    const made = new Set<string>();

    const a = makeSocket();
    recordMoves(a, made);
    a.close(); // idle -> closed
    a.connect(); // closed -> connecting
    FakeWebSocket.last().serverClose(1006); // connecting -> closed (never opened)

    const b = makeSocket();
    recordMoves(b, made);
    b.connect(); // idle -> connecting
    b.connect(); // connecting: only the socket is replaced, no move
    FakeWebSocket.last().open(); // connecting -> open
    b.connect(); // open -> connecting (a fresh socket, SPEC 4 re-creation)
    FakeWebSocket.last().open();
    FakeWebSocket.last().serverClose(1006); // open -> closed
    b.connect();
    FakeWebSocket.last().open();
    b.close(); // open -> closed, deliberately

    const allowed = Object.entries(EVENT_SOCKET_TRANSITIONS).flatMap(([from, tos]) =>
      tos.map((to) => `${from}->${to}`),
    );
    expect([...made].sort()).toEqual(allowed.sort());
  });

  it('throws on an illegal move and stays where it was', () => {
    const socket = makeSocket();
    socket.connect();
    socket.close();
    // setState is private: only a bug inside the class could ask for closed -> open (the open
    // of a dropped socket is ignored before it gets there).
    const internal = socket as unknown as { setState(state: EventSocketState): void };
    expect(() => internal.setState('open')).toThrow(IllegalTransitionError);
    expect(socket.getState()).toBe('closed');
  });

  it('ignores the open of a socket it already dropped (no closed -> open)', () => {
    const socket = makeSocket();
    socket.connect();
    const ws = FakeWebSocket.last();
    const onopen = ws.onopen;
    socket.close();
    onopen?.(new Event('open')); // an engine that fires a handler it was told to forget
    expect(socket.getState()).toBe('closed');
  });
});
