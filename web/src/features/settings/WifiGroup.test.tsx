import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WifiNetwork, WifiStatus } from '@kvm/protocol/system';
import en from '../../i18n/en.json';
import zh from '../../i18n/zh.json';
import { i18n } from '../../i18n';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { click, typeInto } from '../system/test-utils';
import WifiGroup from './WifiGroup';

const STATUS: WifiStatus = {
  state: 0,
  ssid: '',
  bssid: '',
  channel: 0,
  signal: 0,
  fail_type: null,
  ipv4: { ip: '', dns: [], gateway: '' },
  enabled: true,
  adapter: 'test-radio',
  adapter_label: 'Test radio (simulated)',
};

function network(ssid: string, secure: boolean, quality: number): WifiNetwork {
  const signal = quality / 2 - 100;
  return {
    ssid,
    bssid: '02:00:00:00:01:01',
    channel: 6,
    signal,
    quality,
    secure,
    encryption: secure ? 'wpa2-psk' : 'none',
    saved: false,
    connected: false,
  };
}

const NETWORKS = [network('Cafe', false, 40), network('KVM-Lab', true, 90)];

async function renderGroup(): Promise<Rendered> {
  const view = await renderPanel(<WifiGroup />);
  return view;
}

describe('WifiGroup', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
  });

  it('scans, lists networks with signal and lock, and joins with a checked password', async () => {
    let status = STATUS;
    const posts: RecordedRequest[] = [];
    const { requests } = stubFetch({
      '/api/repeater/get_status': () => envelope(200, status),
      '/api/repeater/get_saved_ap_list': () => envelope(200, { ap_list: [] }),
      '/api/repeater/scan': () => envelope(200, { ap_list: NETWORKS }),
      '/api/repeater/connect': (req) => {
        posts.push(req);
        status = { ...STATUS, state: 2, ssid: 'KVM-Lab' };
        return envelope(200, { result: 'success', pending: null });
      },
    });
    view = await renderGroup();
    expect(view.byTestId('wifi-status')?.textContent).toContain('Test radio (simulated)');

    click(view, 'wifi-scan');
    await flush();
    expect(requests.find((r) => r.path === '/api/repeater/scan')).toBeDefined();
    const lab = view.byTestId('wifi-network-KVM-Lab');
    // strongest first, with four bars and a lock
    expect(view.container.querySelector('[data-testid^="wifi-network-"]')).toBe(lab);
    expect(lab?.querySelector('[data-bars]')?.getAttribute('data-bars')).toBe('4');
    expect(lab?.querySelector('.anticon-lock')).not.toBeNull();
    expect(view.byTestId('wifi-network-Cafe')?.querySelector('.anticon-lock')).toBeNull();

    click(view, 'wifi-network-KVM-Lab');
    await flush();
    typeInto(view.byTestId('wifi-password'), 'short');
    click(view, 'wifi-join');
    await flush();
    expect(view.byTestId('wifi-join-error')?.textContent).toBe(en.settings.wifi.passwordLength);
    expect(posts).toHaveLength(0);

    typeInto(view.byTestId('wifi-password'), 'kvm-lab-pass');
    click(view, 'wifi-join');
    await flush();
    expect(posts[0]?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(posts[0]?.body ?? '{}')).toEqual({ ssid: 'KVM-Lab', key: 'kvm-lab-pass' });
    await vi.waitFor(() =>
      expect(view?.byTestId('wifi-status')?.textContent).toContain('Connected to KVM-Lab'),
    );
    expect(view.byTestId('wifi-disconnect')).not.toBeNull();
  });

  it("toasts 'Wi-Fi join failed' with the reason", async () => {
    stubFetch({
      '/api/repeater/get_status': () => envelope(200, STATUS),
      '/api/repeater/get_saved_ap_list': () => envelope(200, { ap_list: [] }),
      '/api/repeater/scan': () => envelope(200, { ap_list: NETWORKS }),
      '/api/repeater/connect': () => envelope(200, { result: 'failed', fail_type: 'key' }),
    });
    view = await renderGroup();
    click(view, 'wifi-scan');
    await flush();
    click(view, 'wifi-network-KVM-Lab');
    await flush();
    typeInto(view.byTestId('wifi-password'), 'not-the-key');
    click(view, 'wifi-join');
    await flush();
    await vi.waitFor(() =>
      expect(document.body.textContent).toContain('Wi-Fi join failed: wrong password'),
    );
  });

  it('forgets a saved network, disconnects and switches the radio with enable=true|false', async () => {
    const posts: RecordedRequest[] = [];
    const record = (req: RecordedRequest) => {
      posts.push(req);
      return envelope(200, {});
    };
    stubFetch({
      '/api/repeater/get_status': () => envelope(200, { ...STATUS, state: 2, ssid: 'Home' }),
      '/api/repeater/get_saved_ap_list': () =>
        envelope(200, { ap_list: [{ ssid: 'Home', encryption: 'wpa2-psk' }] }),
      '/api/repeater/remove_saved_ap': record,
      '/api/repeater/disconnect': record,
      '/api/repeater/enable': record,
    });
    view = await renderGroup();
    expect(view.byTestId('wifi-saved-Home')).not.toBeNull();
    click(view, 'wifi-forget-Home');
    await flush();
    expect(posts[0]?.path).toBe('/api/repeater/remove_saved_ap');
    expect(JSON.parse(posts[0]?.body ?? '{}')).toEqual({ ssid: 'Home' });
    click(view, 'wifi-disconnect');
    await flush();
    expect(posts[1]?.path).toBe('/api/repeater/disconnect');
    click(view, 'wifi-enable');
    await flush();
    expect(posts[2]?.path).toBe('/api/repeater/enable');
    expect(posts[2]?.query.get('enable')).toBe('false');
  });

  it("says 'No Wi-Fi adapter' and offers nothing else", async () => {
    stubFetch({
      '/api/repeater/get_status': () =>
        envelope(200, {
          ...STATUS,
          enabled: false,
          adapter: 'none',
          adapter_label: 'No Wi-Fi adapter',
        }),
      '/api/repeater/get_saved_ap_list': () => envelope(200, { ap_list: [] }),
    });
    view = await renderGroup();
    expect(view.byTestId('wifi-status')?.textContent).toBe('No Wi-Fi adapter');
    expect(view.byTestId('wifi-scan')).toBeNull();
    expect(view.byTestId('wifi-enable')?.hasAttribute('disabled')).toBe(true);
  });

  it("translates the server's adapter label code; a name without one stays as it is", async () => {
    stubFetch({
      '/api/repeater/get_status': () =>
        envelope(200, { ...STATUS, adapter_label_code: 'test_radio' }),
      '/api/repeater/get_saved_ap_list': () => envelope(200, { ap_list: [] }),
    });
    await i18n.changeLanguage('zh');
    try {
      view = await renderGroup();
      const label = view.byTestId('wifi-adapter')?.textContent;
      expect(label).toBe(zh.settings.wifi.adapterLabel.test_radio);
      expect(label).not.toBe('Test radio (simulated)');
    } finally {
      await i18n.changeLanguage('en');
    }
    view.unmount();
    stubFetch({
      '/api/repeater/get_status': () =>
        envelope(200, { ...STATUS, adapter: 'nmcli', adapter_label: 'wlan0' }),
      '/api/repeater/get_saved_ap_list': () => envelope(200, { ap_list: [] }),
    });
    view = await renderGroup();
    expect(view.byTestId('wifi-adapter')?.textContent).toBe('wlan0');
    expect(en.settings.wifi.adapterLabel.test_radio).toBe('Test radio (simulated)');
  });
});
