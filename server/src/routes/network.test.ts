import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listNamespaces, namespaceSkipReason } from '../platform/netns/test-support';
import { netnsNames } from '../drivers/network/netns';
import { AppPerTest } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

async function start(overrides: Record<string, unknown> = {}) {
  const { app: a, token } = await apps.start(overrides);
  return {
    get: (path: string) =>
      a.inject({ method: 'GET', url: `/api/system/${path}`, headers: { token } }),
    post: (path: string) =>
      a.inject({ method: 'POST', url: `/api/system/${path}`, headers: { token } }),
  };
}

const STATIC = 'mode=static&ip_address=192.168.8.50&netmask=255.255.255.0&gateway=192.168.8.1';

describe('network routes: arguments and errors (no network managed)', () => {
  it('answers every GL message and ours with 400 BadRequestError in the envelope', async () => {
    const { get, post } = await start({ system: { network: 'disabled' } });
    const res = await get('get_network_config');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      ok: true,
      result: { success: true, config: { available: false, driver: 'disabled', pending: null } },
    });
    const cases: Array<[string, string]> = [
      ['', "mode parameter is required, must be 'dhcp' or 'static'"],
      ['mode=bridge', "mode parameter is required, must be 'dhcp' or 'static'"],
      [
        'mode=static&ip_address=192.168.8.50',
        'Static IP mode requires ip_address, netmask and gateway parameters',
      ],
      [STATIC.replace('192.168.8.50', '192.168.8'), 'ip_address format is invalid'],
      [STATIC.replace('255.255.255.0', '255.255.0.255'), 'netmask format is invalid'],
      [STATIC.replace('gateway=192.168.8.1', 'gateway=router'), 'gateway format is invalid'],
      [`${STATIC}&dns_servers=1.1.1.1,bad`, 'Invalid DNS server address format: bad'],
      [
        STATIC.replace('192.168.8.50', '127.0.0.1'),
        'ip_address cannot be 127.0.0.1 (loopback address)',
      ],
      [
        STATIC.replace('192.168.8.50', '0.0.0.0'),
        'ip_address cannot be 0.0.0.0 (unspecified address)',
      ],
      [
        STATIC.replace('192.168.8.50', '239.1.1.1'),
        'ip_address cannot be 239.1.1.1 (multicast address)',
      ],
      [
        STATIC.replace('192.168.8.50', '192.168.8.0'),
        'ip_address cannot be 192.168.8.0 (network address of 192.168.8.0/24)',
      ],
      [
        STATIC.replace('192.168.8.50', '192.168.8.255'),
        'ip_address cannot be 192.168.8.255 (broadcast address of 192.168.8.0/24)',
      ],
      [
        STATIC.replace('gateway=192.168.8.1', 'gateway=10.0.0.1'),
        'gateway 10.0.0.1 is outside the subnet 192.168.8.0/24',
      ],
      [
        `${STATIC}&dns_servers=255.255.255.255`,
        'dns_servers cannot be 255.255.255.255 (broadcast address)',
      ],
    ];
    for (const [query, message] of cases) {
      const r = await post(`set_network_config?${query}`);
      expect(r.statusCode, query).toBe(400);
      expect(r.json(), query).toEqual({
        ok: false,
        result: { error: 'BadRequestError', error_msg: message },
      });
    }
    // Valid, but this device does not manage its network: says why, 400 as GL.
    const r = await post(`set_network_config?${STATIC}`);
    expect(r.statusCode).toBe(400);
    expect(r.json().result.error).toBe('SystemFeatureUnavailableError');
    expect(r.json().result.error_msg).toMatch(/disabled/);

    let c = await post('confirm_network_config?id=0123456789abcdef');
    expect(c.statusCode).toBe(404);
    expect(c.json().result.error).toBe('NetworkChangeNotFoundError');
    c = await post('revert_network_config?id=0123456789abcdef');
    expect(c.statusCode).toBe(404);
    c = await post('confirm_network_config');
    expect(c.statusCode).toBe(400);
    expect(c.json().result.error).toBe('ValidatorError');

    const h = await post('set_hostname?hostname=bad_name');
    expect(h.statusCode).toBe(400);
    expect(h.json().result.error_msg).toMatch(/^hostname is invalid/);
    expect((await post('set_hostname')).json().result.error_msg).toBe(
      'hostname parameter is required',
    );
    expect((await get('get_hostname')).json()).toEqual({
      ok: true,
      result: { success: true, hostname: '' },
    });
  });

  it('needs a session', async () => {
    await start({ system: { network: 'disabled' } });
    for (const url of ['/api/system/get_network_config', '/api/system/get_hostname']) {
      expect((await apps.app!.inject({ method: 'GET', url })).statusCode).toBe(401);
    }
    const res = await apps.app!.inject({
      method: 'POST',
      url: `/api/system/set_network_config?${STATIC}`,
    });
    expect(res.statusCode).toBe(401);
  });
});

const skipReason = namespaceSkipReason();

describe.skipIf(skipReason !== null)('network routes on real namespaces (testbed, netns)', () => {
  const exists = (path: string) =>
    stat(path).then(
      () => true,
      () => false,
    );

  it('static, confirmed, then DHCP again; the namespaces go with app.close()', async () => {
    const { get, post } = await start({ system: { network: 'netns' } });
    const names = netnsNames(apps.dataDir!);
    let config = (await get('get_network_config')).json().result.config;
    expect(config).toMatchObject({ available: true, driver: 'netns', interface: 'eth0' });

    let res = await post(`set_network_config?${STATIC}&dns_servers=192.168.8.1`);
    expect(res.statusCode, res.body).toBe(200);
    const { pending } = res.json().result;
    expect(pending).toMatchObject({ kind: 'ethernet', timeout_s: 60 });
    expect(pending.new_address).toMatch(/^http:\/\/192\.168\.8\.50[:/]/);
    config = (await get('get_network_config')).json().result.config;
    expect(config).toMatchObject({
      is_dhcp: false,
      ip_address: '192.168.8.50',
      netmask: '255.255.255.0',
      gateway: '192.168.8.1',
      dns_servers: ['192.168.8.1'],
      state: 'online',
      pending: { id: pending.id },
    });
    // A second change while this one waits: 409.
    res = await post('set_network_config?mode=dhcp');
    expect(res.statusCode).toBe(409);
    expect(res.json().result.error).toBe('NetworkChangePendingError');

    res = await post(`confirm_network_config?id=${pending.id}`);
    expect(res.statusCode).toBe(200);
    expect(await exists(join(apps.dataDir!, 'system', 'network.json'))).toBe(true);
    expect((await get('get_network_config')).json().result.config.pending).toBeNull();

    res = await post('set_network_config?mode=dhcp&dns_servers=');
    expect(res.statusCode, res.body).toBe(200);
    const back = res.json().result.pending;
    expect(back.new_address).toMatch(/^http:\/\/192\.168\.8\.1\d\d[:/]/);
    await post(`confirm_network_config?id=${back.id}`);
    config = (await get('get_network_config')).json().result.config;
    expect(config.is_dhcp).toBe(true);
    expect(config.ip_address).toMatch(/^192\.168\.8\.1\d\d$/);

    expect((await post('set_hostname?hostname=desk-kvm')).json().result).toEqual({
      success: true,
      hostname: 'desk-kvm',
    });
    expect((await get('get_hostname')).json().result.hostname).toBe('desk-kvm');

    await apps.app!.close();
    apps.app = undefined;
    const left = await listNamespaces();
    expect(left).not.toContain(names.dev);
    expect(left).not.toContain(names.lan);
  }, 60_000);

  it('an unconfirmed change is reverted by itself after confirm_timeout_s', async () => {
    const { get, post } = await start({ system: { network: 'netns', confirm_timeout_s: 5 } });
    const before = (await get('get_network_config')).json().result.config;
    expect(before.is_dhcp).toBe(true);
    const res = await post(`set_network_config?${STATIC}`);
    expect(res.statusCode, res.body).toBe(200);
    const t0 = Date.now();
    expect((await get('get_network_config')).json().result.config.ip_address).toBe('192.168.8.50');
    await vi.waitFor(
      async () => {
        const config = (await get('get_network_config')).json().result.config;
        expect(config.pending).toBeNull();
        expect(config.is_dhcp).toBe(true);
        expect(config.ip_address).toMatch(/^192\.168\.8\.1\d\d$/);
      },
      { timeout: 20_000, interval: 250 },
    );
    const after = (Date.now() - t0) / 1000;
    expect(after).toBeGreaterThanOrEqual(4.5);
    expect(await exists(join(apps.dataDir!, 'system', 'network.pending.json'))).toBe(false);
    expect(await exists(join(apps.dataDir!, 'system', 'network.json'))).toBe(false);
  }, 60_000);
});
