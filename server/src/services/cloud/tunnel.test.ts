import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_STREAM_WINDOW,
  decodeStreamFrame,
  STREAM_KIND,
  type AgentControl,
} from '@kvm/protocol';
import { SILENT_LOGGER } from '../../log';
import { until } from '../../platform/qemu/test-support';
import { Tunnel, type TunnelLink } from './tunnel';

/** What the tunnel sent toward the fleet. */
function recorder(): {
  controls: AgentControl[];
  bytes: (sid: number) => number;
  link: TunnelLink;
} {
  const controls: AgentControl[] = [];
  const sizes = new Map<number, number>();
  return {
    controls,
    bytes: (sid) => sizes.get(sid) ?? 0,
    link: {
      control: (f) => controls.push(f),
      binary: (b) => {
        const f = decodeStreamFrame(b)!;
        sizes.set(f.sid, (sizes.get(f.sid) ?? 0) + f.payload.byteLength);
      },
    },
  };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

function open(sid: number, path = '/big', extra: Partial<AgentControl> = {}): AgentControl {
  return {
    t: 'open',
    sid,
    kind: 'http',
    method: 'GET',
    path,
    headers: {},
    user: { id: 'u', name: 'fleetuser' },
    ...extra,
  } as AgentControl;
}

describe('Tunnel flow control', () => {
  it('never sends past the window: the response waits for acks', async () => {
    const size = 3 * AGENT_STREAM_WINDOW + 12_345;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.alloc(size, 7));
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const rec = recorder();
    const tunnel = new Tunnel({
      local: () => ({ origin: `http://127.0.0.1:${port}`, cert: null }),
      sessions: { tokenFor: async () => 'a'.repeat(64) },
      log: SILENT_LOGGER,
    });
    tunnel.attach(rec.link);
    tunnel.open(open(1) as Extract<AgentControl, { t: 'open' }>);
    await until('a full window', () => rec.bytes(1) === AGENT_STREAM_WINDOW);
    // nothing more comes without an ack
    await new Promise((r) => setTimeout(r, 200));
    expect(rec.bytes(1)).toBe(AGENT_STREAM_WINDOW);
    let acked = 0;
    while (!rec.controls.some((c) => c.t === 'end')) {
      const unacked = rec.bytes(1) - acked;
      expect(unacked).toBeLessThanOrEqual(AGENT_STREAM_WINDOW);
      if (unacked > 0) {
        tunnel.ack(1, unacked);
        acked += unacked;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(rec.bytes(1)).toBe(size);
    expect(rec.controls.find((c) => c.t === 'head')).toMatchObject({ status: 200 });
    expect(rec.controls.at(-1)).toEqual({ t: 'end', sid: 1 });
    expect(tunnel.size).toBe(0);
  });

  it('ends a stream whose sender overruns the window (1008)', async () => {
    const rec = recorder();
    const tunnel = new Tunnel({
      local: () => ({ origin: 'http://127.0.0.1:9', cert: null }),
      // the session never comes: everything the fleet sends is held, unacknowledged
      sessions: { tokenFor: () => new Promise<string>(() => undefined) },
      log: SILENT_LOGGER,
    });
    tunnel.attach(rec.link);
    tunnel.open(
      open(5, '/upload', {
        method: 'POST',
        headers: { 'content-length': String(2 * AGENT_STREAM_WINDOW) },
      } as Partial<AgentControl>) as Extract<AgentControl, { t: 'open' }>,
    );
    const piece = Buffer.alloc(64 * 1024);
    for (let i = 0; i < 16; i++) tunnel.data(5, STREAM_KIND.data, piece);
    expect(rec.controls).toEqual([]);
    tunnel.data(5, STREAM_KIND.data, Buffer.alloc(1));
    expect(rec.controls).toEqual([{ t: 'end', sid: 5, code: 1008, reason: 'window overrun' }]);
    expect(tunnel.size).toBe(0);
  });

  it('refuses a stream past AGENT_MAX_STREAMS and a reused id', async () => {
    const rec = recorder();
    const tunnel = new Tunnel({
      local: () => ({ origin: 'http://127.0.0.1:9', cert: null }),
      sessions: { tokenFor: () => new Promise<string>(() => undefined) },
      log: SILENT_LOGGER,
    });
    tunnel.attach(rec.link);
    for (let sid = 1; sid <= 65; sid++) {
      tunnel.open(open(sid) as Extract<AgentControl, { t: 'open' }>);
    }
    tunnel.open(open(1) as Extract<AgentControl, { t: 'open' }>);
    const heads = rec.controls.filter((c) => c.t === 'head');
    expect(heads).toEqual([
      expect.objectContaining({ sid: 65, status: 503 }),
      expect.objectContaining({ sid: 1, status: 409 }),
    ]);
    expect(tunnel.size).toBe(64);
    tunnel.closeAll();
    expect(tunnel.size).toBe(0);
  });
});
