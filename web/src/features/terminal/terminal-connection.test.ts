import { beforeEach, describe, expect, it } from 'vitest';
import { FakeWebSocket } from '../../test/fake-websocket';
import { TerminalConnection, type TerminalStatus } from './terminal-connection';

const out = (text: string) => new TextEncoder().encode(`0${text}`).buffer;

function connect(target: 'device' | 'serial') {
  const statuses: TerminalStatus[] = [];
  const output: string[] = [];
  const conn = new TerminalConnection({
    target,
    url: 'ws://device/api/terminal/ws',
    size: () => ({ columns: 80, rows: 24 }),
    onOutput: (d) => output.push(new TextDecoder().decode(d)),
    onStatus: (s) => statuses.push(s),
    createSocket: (url) => new FakeWebSocket(url),
  });
  return { conn, statuses, output, ws: FakeWebSocket.last() };
}

describe('TerminalConnection', () => {
  beforeEach(() => FakeWebSocket.reset());

  it('says the shell is starting from the handshake until its first output', () => {
    const { conn, statuses, output, ws } = connect('device');
    expect(conn.status).toBe('connecting');
    ws.open();
    expect(JSON.parse(ws.sent[0] as string)).toEqual({ AuthToken: '', columns: 80, rows: 24 });
    expect(conn.status).toBe('starting');
    // the title and preferences come first: still nothing from the shell
    ws.receive(new TextEncoder().encode('1Device shell').buffer);
    ws.receive(new TextEncoder().encode('2{}').buffer);
    expect(conn.status).toBe('starting');
    // typing ahead while the profile runs reaches the shell
    conn.send(new Uint8Array([0x30, 0x61]));
    expect(ws.sent).toHaveLength(2);
    ws.receive(out('$ '));
    expect(conn.status).toBe('open');
    expect(output).toEqual(['$ ']);
    expect(statuses).toEqual(['starting', 'open']);
  });

  it("tells the server's start timeout apart from other closes, with its bound", () => {
    const { conn, ws } = connect('device');
    ws.open();
    ws.onclose?.({ code: 1000, reason: 'start timeout 30' } as CloseEvent);
    expect(conn.status).toBe('startTimeout');
    expect(conn.startTimeoutS).toBe(30);

    const other = connect('device');
    other.ws.open();
    other.ws.receive(out('$ '));
    other.ws.onclose?.({ code: 1000, reason: 'shell exited (0)' } as CloseEvent);
    expect(other.conn.status).toBe('closed');

    const ended = connect('device');
    ended.ws.open();
    ended.ws.onclose?.({ code: 4001, reason: 'logout' } as CloseEvent);
    expect(ended.conn.status).toBe('sessionEnded');
  });

  it('does not wait for output on a serial line (it may be silent until a key)', () => {
    const { conn, ws } = connect('serial');
    ws.open();
    expect(conn.status).toBe('open');
  });

  it('reports nothing after dispose', () => {
    const { conn, statuses, ws } = connect('device');
    ws.open();
    conn.dispose();
    expect(ws.closed).toBe(true);
    ws.onclose?.({ code: 1006, reason: '' } as CloseEvent);
    expect(statuses).toEqual(['starting']);
  });
});
