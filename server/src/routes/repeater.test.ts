import { afterEach, describe, expect, it } from 'vitest';
import { AppPerTest } from '../test-helpers';

const apps = new AppPerTest();
afterEach(() => apps.stop());

async function start(target = 'testbed') {
  const { app: a, token } = await apps.start(target === 'testbed' ? {} : { target });
  return {
    get: (path: string) =>
      a.inject({ method: 'GET', url: `/api/repeater/${path}`, headers: { token } }),
    post: (path: string, body?: unknown, raw?: string) =>
      a.inject({
        method: 'POST',
        url: `/api/repeater/${path}`,
        headers: {
          token,
          ...(body !== undefined || raw !== undefined
            ? { 'content-type': 'application/json' }
            : {}),
        },
        ...(raw !== undefined
          ? { payload: raw }
          : body !== undefined
            ? { payload: JSON.stringify(body) }
            : {}),
      }),
  };
}

describe('/api/repeater on the testbed (test radio)', () => {
  it('scans, joins with a key, lists saved networks, forgets', async () => {
    const { get, post } = await start();
    let res = await get('get_status');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      ok: true,
      result: {
        state: 0,
        adapter: 'test-radio',
        adapter_label: 'Test radio (simulated)',
        // the code the console translates (issue 21 item 17)
        adapter_label_code: 'test_radio',
        enabled: true,
      },
    });

    // Two scans at once share one radio scan.
    const [scanA, scanB] = await Promise.all([get('scan'), get('scan')]);
    expect(scanA.statusCode).toBe(200);
    const list = scanA.json().result.ap_list as Array<{
      ssid: string;
      signal: number;
      secure: boolean;
    }>;
    expect(scanB.json().result.ap_list).toEqual(list);
    expect(list.map((n) => n.ssid)).toEqual(['KVM-Lab', 'KVM-Guest', 'Office-5G', 'KVM-Broken']);
    // Office-5G: the strongest of its two access points.
    expect(list.find((n) => n.ssid === 'Office-5G')).toMatchObject({
      signal: -67,
      channel: 36,
      secure: true,
    });

    res = await post('connect', { ssid: 'KVM-Lab', key: 'wrong-password' });
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toMatchObject({ result: 'failed', fail_type: 'key' });
    expect((await get('get_status')).json().result).toMatchObject({ state: 3, fail_type: 'key' });

    res = await post('connect', { ssid: 'KVM-Lab', key: 'kvm-lab-pass' });
    expect(res.json().result).toMatchObject({ result: 'success', fail_type: null, pending: null });
    const status = (await get('get_status')).json().result;
    expect(status).toMatchObject({ state: 2, ssid: 'KVM-Lab', channel: 6, fail_type: null });
    expect(status.ipv4.ip).toMatch(/^192\.168\.50\./);

    res = await get('scan');
    expect(res.json().result.ap_list[0]).toMatchObject({
      ssid: 'KVM-Lab',
      saved: true,
      connected: true,
    });
    res = await get('get_saved_ap_list');
    expect(res.json().result.ap_list).toEqual([{ ssid: 'KVM-Lab', encryption: 'wpa2-psk' }]);

    res = await post('disconnect');
    expect(res.statusCode).toBe(200);
    expect((await get('get_status')).json().result.state).toBe(0);

    // A saved network rejoins with its saved key.
    res = await post('connect', { ssid: 'KVM-Lab' });
    expect(res.json().result.result).toBe('success');

    res = await post('remove_saved_ap', { ssid: 'KVM-Lab' });
    expect(res.json().result).toEqual({ removed: true });
    expect((await get('get_saved_ap_list')).json().result.ap_list).toEqual([]);
    expect((await get('get_status')).json().result.state).toBe(0);
  });

  it('the broken network fails with not-found; an open one joins', async () => {
    const { get, post } = await start();
    await get('scan');
    let res = await post('connect', { ssid: 'KVM-Broken' });
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toMatchObject({ result: 'failed', fail_type: 'not-found' });
    res = await post('connect', { ssid: 'KVM-Guest' });
    expect(res.json().result.result).toBe('success');
  });

  it('refuses bad input with GL messages and names the argument', async () => {
    const { get, post } = await start();
    const expect400 = async (res: Awaited<ReturnType<typeof post>>, message: string | RegExp) => {
      expect(res.statusCode).toBe(400);
      const body = res.json();
      expect(body.ok).toBe(false);
      expect(body.result.error).toBe('BadRequestError');
      expect(body.result.error_msg).toMatch(message);
    };
    await expect400(
      await post('connect', undefined, '["KVM-Lab"]'),
      /^Configuration data must be in JSON object format$/,
    );
    await expect400(
      await post('connect', undefined, '"KVM-Lab"'),
      /^Configuration data must be in JSON object format$/,
    );
    await expect400(await post('connect'), /^Configuration data must be in JSON object format$/);
    await expect400(await post('connect', { key: 'kvm-lab-pass' }), /^Missing SSID$/);
    await expect400(await post('connect', { ssid: '' }), /^Missing SSID$/);
    await expect400(
      await post('connect', { ssid: 'x'.repeat(33) }),
      /^ssid is longer than 32 bytes$/,
    );
    await expect400(
      await post('connect', { ssid: 'é'.repeat(17) }),
      /^ssid is longer than 32 bytes$/,
    );
    await get('scan');
    await expect400(
      await post('connect', { ssid: 'KVM-Lab', key: 'short' }),
      /^key must be 8 to 63/,
    );
    await expect400(
      await post('connect', { ssid: 'KVM-Lab', key: 'k'.repeat(64) }),
      /^key must be/,
    );
    // No radio takes a line break or a non-ASCII letter in a WPA key.
    for (const key of ['kvm-lab-pass\nX', 'kvm-läb-pass']) {
      await expect400(
        await post('connect', { ssid: 'KVM-Lab', key, hidden: true }),
        /^key must be 8 to 63 printable ASCII characters or 64 hex digits$/,
      );
    }
    await expect400(
      await post('connect', { ssid: 'KVM\u0000Lab', hidden: true }),
      /^ssid cannot contain a NUL character$/,
    );
    await expect400(await post('connect', { ssid: 'Nowhere' }), /^ssid 'Nowhere' was not found/);
    await expect400(await post('remove_saved_ap', {}), /^Missing SSID$/);
    // A 64-hex-digit key is a raw PSK: accepted (and wrong here).
    const res = await post('connect', { ssid: 'KVM-Lab', key: 'a'.repeat(64) });
    expect(res.json().result).toMatchObject({ result: 'failed', fail_type: 'key' });
    // A hidden network may be joined without a scan; this one is not in the air.
    const hidden = await post('connect', { ssid: 'Nowhere', hidden: true });
    expect(hidden.json().result).toMatchObject({ result: 'failed', fail_type: 'not-found' });
    // Over the body limit.
    const big = await post('connect', { ssid: 'KVM-Lab', pad: 'x'.repeat(5000) });
    expect(big.statusCode).toBe(413);
  });

  it('enable: only exactly true enables; a disabled radio does not scan', async () => {
    const { get, post } = await start();
    expect((await post('enable?enable=1')).statusCode).toBe(200);
    expect((await get('get_status')).json().result.enabled).toBe(false);
    const res = await get('scan');
    expect(res.statusCode).toBe(400);
    expect(res.json().result).toMatchObject({
      error: 'WifiDisabledError',
      error_msg: 'Wi-Fi is disabled',
    });
    expect((await post('enable?enable=true')).statusCode).toBe(200);
    expect((await get('get_status')).json().result.enabled).toBe(true);
  });

  it('needs a session', async () => {
    await start();
    const res = await apps.app!.inject({ method: 'GET', url: '/api/repeater/get_status' });
    expect(res.statusCode).toBe(401);
  });
});
