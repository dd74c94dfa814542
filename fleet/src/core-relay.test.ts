/**
 * The core and the relay together in one replica (registerRelay on the core's app): a device
 * bound by code connects its agent with the secret it collected and is online in the list; the
 * account unbinding it reaches its socket; the same secret from other hardware is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  AGENT_PATH,
  parseAgentControl,
  type BindCodeAnswer,
  type BindResult,
  type DeviceIdentity,
} from '@kvm/protocol';
import { api, identity, result, signUpAndIn, startKit, type Kit } from './test-kit';

let kit: Kit;
let base: string;
beforeAll(async () => {
  kit = await startKit({ relay: true });
  await kit.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = kit.app.server.address() as { port: number };
  base = `ws://127.0.0.1:${addr.port}`;
});
afterAll(() => kit?.close());

function connect(
  id: string,
  secret: string,
  who: DeviceIdentity,
): Promise<{ ws: WebSocket; status: number | null; headers: Record<string, unknown> }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${base}${AGENT_PATH}`, {
      headers: {
        authorization: `Device ${id}:${secret}`,
        'x-kvm-device-mac': who.mac,
        'x-kvm-device-serial': who.serial,
      },
    });
    ws.once('open', () => resolve({ ws, status: 101, headers: {} }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ ws, status: res.statusCode ?? null, headers: res.headers });
      res.resume();
    });
    ws.once('error', () => resolve({ ws, status: null, headers: {} }));
  });
}

function nextControl(
  ws: WebSocket,
  t: string,
  timeoutMs = 10_000,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${t} frame`)), timeoutMs);
    const on = (data: WebSocket.RawData, binary: boolean) => {
      if (binary) return;
      const f = parseAgentControl(data.toString());
      if (f?.t !== t) return;
      clearTimeout(timer);
      ws.off('message', on);
      resolve(f as unknown as Record<string, unknown>);
    };
    ws.on('message', on);
  });
}

describe('core + relay', () => {
  it('bound by code, the agent connects, is online, and learns of its unbinding', async () => {
    const { cookie } = await signUpAndIn(kit, 'relay1', 'pw1234');
    const who = identity({ name: 'agent-1' });
    const code = result<BindCodeAnswer>(
      await api(kit, 'POST', '/bind/codes', { device: who }, { device: true }),
    );
    const waiting = api(
      kit,
      'POST',
      '/bind/poll',
      { claim_token: code.claim_token },
      { device: true },
    );
    result(await api(kit, 'POST', '/devices/claim', { code: code.code }, { cookie }));
    const bound = result<BindResult>(await waiting);
    // the relay's list of live replicas' agent URLs (one replica here)
    expect(bound.endpoints).toEqual(['wss://fleet.test:8443/cloud-basic/v1/agent']);

    // the same secret from other hardware: 403
    const other = await connect(bound.device_id, bound.secret, { ...who, serial: 'stolen' });
    expect(other.status).toBe(403);

    const c = await connect(bound.device_id, bound.secret, who);
    expect(c.status).toBe(101);
    const welcome = nextControl(c.ws, 'welcome');
    c.ws.send(JSON.stringify({ t: 'hello', version: '1.0.0', identity: who }));
    expect((await welcome).replica).toBe('fleet-test');
    await expect
      .poll(
        async () =>
          result<{ devices: { id: string; online: boolean }[] }>(
            await api(kit, 'GET', '/devices', undefined, { cookie }),
          ).devices.find((d) => d.id === bound.device_id)?.online,
        { timeout: 10_000 },
      )
      .toBe(true);

    const unbound = nextControl(c.ws, 'unbound');
    result(await api(kit, 'DELETE', `/devices/${bound.device_id}`, undefined, { cookie }));
    expect((await unbound).by).toBe('fleet');
    c.ws.terminate();

    // and the next connection is told the binding is gone
    const again = await connect(bound.device_id, bound.secret, who);
    expect(again.status).toBe(401);
    expect(again.headers['x-kvm-binding']).toBe('revoked');
  }, 60_000);
});
