import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_BACKOFF_BASE_MS, AGENT_BACKOFF_MAX_MS } from '@kvm/protocol';
import { SILENT_LOGGER } from '../../log';
import { until } from '../../platform/qemu/test-support';
import { backoffDelay, CloudAgent, type AgentClock } from './agent';
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
