import { X509Certificate } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT_BACKOFF_BASE_MS,
  AGENT_BACKOFF_MAX_MS,
  AGENT_DEAD_MS,
  AGENT_PING_MS,
} from '@kvm/protocol';
import { SILENT_LOGGER } from '../../log';
import { until } from '../../platform/qemu/test-support';
import { tempDataDir } from '../../test-helpers';
import { backoffDelay, CloudAgent, type AgentClock } from './agent';
import { FakeFleet } from './fleet-test-kit';
import { Tunnel } from './tunnel';

describe('backoffDelay (full jitter)', () => {
  it('stays in 0 .. min(max, base·2^n) and reaches the cap', () => {
    for (let n = 0; n < 40; n++) {
      const cap = Math.min(AGENT_BACKOFF_MAX_MS, AGENT_BACKOFF_BASE_MS * 2 ** n);
      expect(backoffDelay(n, () => 0)).toBe(0);
      const top = backoffDelay(n, () => 0.999_999);
      expect(top).toBeLessThan(cap);
      expect(top).toBeGreaterThanOrEqual(cap - 1);
    }
    expect(backoffDelay(100, () => 0.5)).toBe(AGENT_BACKOFF_MAX_MS / 2);
  });
});

/** A TCP listener that counts connections and cuts each at once (a fleet that is down). */
async function refusing(): Promise<{ server: Server; port: number; hits: () => number }> {
  let hits = 0;
  const server = createServer((socket) => {
    hits += 1;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, hits: () => hits };
}

describe('CloudAgent reconnects', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  });

  it('waits a full-jitter delay between attempts and rotates through the endpoints', async () => {
    const a = await refusing();
    const b = await refusing();
    servers.push(a.server, b.server);
    // a clock the test drives: each retry's delay is recorded and run by hand
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const clock: AgentClock = {
      now: () => 0,
      setTimeout: (fn, ms) => {
        const t = { fn, ms };
        timers.push(t);
        return t;
      },
      clearTimeout: (h) => {
        const i = timers.indexOf(h as (typeof timers)[number]);
        if (i >= 0) timers.splice(i, 1);
      },
    };
    const states: string[] = [];
    const agent = new CloudAgent({
      credentials: () => ({
        deviceId: 'dev',
        secret: 'x'.repeat(43),
        endpoints: [`wss://127.0.0.1:${a.port}/a`, `wss://127.0.0.1:${b.port}/b`],
      }),
      trust: () => ({ pinned: null, pinnedCert: null }),
      identity: async () => ({ mac: '', serial: 's', name: 'n', model: 'RM1', version: '0' }),
      version: '0',
      log: SILENT_LOGGER,
      tunnel: new Tunnel({
        local: () => null,
        sessions: { tokenFor: async () => 't' },
        log: SILENT_LOGGER,
      }),
      onRevoked: () => undefined,
      onTurn: () => undefined,
      onState: (s) => states.push(s),
      onEndpoints: () => undefined,
      command: async () => null,
      clock,
      random: () => 0.999_999,
    });
    agent.start();
    const delays: number[] = [];
    const order: string[] = [];
    try {
      for (let i = 0; i < 8; i++) {
        const before = a.hits() + b.hits();
        await until('a connection attempt', () => a.hits() + b.hits() > before);
        order.push(a.hits() > b.hits() ? 'a' : a.hits() === b.hits() ? 'b' : '?');
        await until('the retry timer', () => timers.length === 1 && agent.linkState === 'offline');
        const t = timers.shift()!;
        delays.push(t.ms);
        t.fn();
      }
    } finally {
      agent.stop();
    }
    expect(order).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
    expect(delays).toEqual([499, 999, 1999, 3999, 7999, 15_999, 29_999, 29_999]);
    expect(states).toContain('offline');
    expect(states.at(-1)).toBe('idle');
  });
});

describe('CloudAgent heartbeat', () => {
  let fleet: FakeFleet | null = null;
  let certs: string | null = null;
  afterEach(async () => {
    await fleet?.close();
    fleet = null;
    if (certs) await rm(certs, { recursive: true, force: true });
    certs = null;
  });

  it('pings every AGENT_PING_MS and gives the socket up after AGENT_DEAD_MS of silence', async () => {
    certs = await tempDataDir();
    fleet = await FakeFleet.start(certs);
    const pem = await readFile(join(certs, 'server.crt'), 'utf8');
    let now = 1_000_000;
    const timers: Array<{ fn: () => void; ms: number }> = [];
    const clock: AgentClock = {
      now: () => now,
      setTimeout: (fn, ms) => {
        const t = { fn, ms };
        timers.push(t);
        return t;
      },
      clearTimeout: (h) => {
        const i = timers.indexOf(h as (typeof timers)[number]);
        if (i >= 0) timers.splice(i, 1);
      },
    };
    const f = fleet;
    const agent = new CloudAgent({
      credentials: () => ({
        deviceId: 'dev-0001',
        secret: f.secret,
        endpoints: [f.binding().endpoints[0]!],
      }),
      trust: () => ({ pinned: new X509Certificate(pem).fingerprint256, pinnedCert: pem }),
      identity: async () => ({ mac: '', serial: 's', name: 'n', model: 'RM1', version: '0' }),
      version: '0',
      log: SILENT_LOGGER,
      tunnel: new Tunnel({
        local: () => null,
        sessions: { tokenFor: async () => 't' },
        log: SILENT_LOGGER,
      }),
      onRevoked: () => undefined,
      onTurn: () => undefined,
      onState: () => undefined,
      onEndpoints: () => undefined,
      command: async () => null,
      clock,
      random: () => 0.5,
    });
    agent.start();
    try {
      await until('online', () => agent.linkState === 'online');
      const peer = f.current()!;
      // the only timer now is the next ping, AGENT_PING_MS away
      expect(timers.map((t) => t.ms)).toEqual([AGENT_PING_MS]);
      now += AGENT_PING_MS;
      timers.shift()!.fn();
      await until('a ping', () => peer.frames.some((x) => x.t === 'ping'));
      expect(peer.frames.find((x) => x.t === 'ping')).toEqual({ t: 'ping', ts: now });
      // its pong is life; then the fleet goes silent for AGENT_DEAD_MS
      await until('next ping timer', () => timers.length === 1);
      now += AGENT_DEAD_MS;
      timers.shift()!.fn();
      await until('given up', () => agent.linkState === 'offline' && peer.closed !== null);
      expect(peer.frames.filter((x) => x.t === 'ping')).toHaveLength(1);
      // and a reconnect is planned (full jitter, first step)
      expect(timers.map((t) => t.ms)).toEqual([AGENT_BACKOFF_BASE_MS / 2]);
    } finally {
      agent.stop();
    }
  });
});
