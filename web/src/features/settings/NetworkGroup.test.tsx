import { afterEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import type { NetworkConfigWire, PendingNetworkChange } from '@kvm/protocol/system';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import NetworkGroup from './NetworkGroup';
import { NETWORK_REFRESH_MS } from '../system/network-store';
import { click, typeInto } from '../system/test-utils';

const DHCP: NetworkConfigWire = {
  is_dhcp: true,
  ip_address: '192.168.8.123',
  netmask: '255.255.255.0',
  gateway: '192.168.8.1',
  dns_servers: ['192.168.8.1'],
  interface: 'eth0',
  mac_address: '02:00:00:00:00:01',
  state: 'online',
  protocol: 'dhcp',
  dns_server1: '192.168.8.1',
  dns_server2: '',
  dns_manual: false,
  hostname: 'kvm',
  link: 'up',
  available: true,
  unavailable_reason: null,
  driver: 'netns',
  pending: null,
};

function pendingChange(): PendingNetworkChange {
  return {
    id: 'c1',
    kind: 'ethernet',
    expires_at: Date.now() + 60_000,
    timeout_s: 60,
    new_address: 'https://192.168.8.50:8443/',
    previous_address: '192.168.8.123',
  };
}

async function renderGroup(): Promise<Rendered> {
  const view = await renderPanel(<NetworkGroup />);
  return view;
}

function fillStatic(view: Rendered, fields: Record<string, string>) {
  click(view, 'network-mode-static');
  for (const [id, value] of Object.entries(fields)) typeInto(view.byTestId(id), value);
}

describe('NetworkGroup', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
    vi.useRealTimers();
  });

  it('shows the state and refuses forbidden addresses and a bad netmask, naming the field', async () => {
    const { requests } = stubFetch({
      '/api/system/get_network_config': () => envelope(200, { success: true, config: DHCP }),
    });
    view = await renderGroup();
    expect(view.byTestId('network-address')?.textContent).toBe('192.168.8.123');
    expect(view.byTestId('network-mac')?.textContent).toBe('02:00:00:00:00:01');
    expect(view.byTestId('network-link')?.dataset['link']).toBe('up');

    fillStatic(view, {
      'network-ip': '127.0.0.1',
      'network-netmask': '255.0.255.0',
      'network-gateway': '192.168.8.1',
      'network-dns1': '224.0.0.1',
    });
    click(view, 'network-apply');
    await flush();
    expect(view.byTestId('network-ip-error')?.textContent).toBe('IP address cannot be 127.0.0.1');
    expect(view.byTestId('network-netmask-error')?.textContent).toBe(
      en.settings.network.errNetmask,
    );
    expect(view.byTestId('network-dns1-error')?.textContent).toBe('DNS 1 cannot be 224.0.0.1');

    // the subnet's broadcast address is nobody's
    fillStatic(view, {
      'network-ip': '192.168.8.255',
      'network-netmask': '255.255.255.0',
      'network-dns1': '192.168.8.1',
    });
    click(view, 'network-apply');
    await flush();
    expect(view.byTestId('network-ip-error')?.textContent).toBe(
      'IP address cannot be 192.168.8.255',
    );
    expect(requests.filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it('applies a static address, shows the pending banner counting down, and keeps it', async () => {
    let config = DHCP;
    const posts: RecordedRequest[] = [];
    stubFetch({
      '/api/system/get_network_config': () => envelope(200, { success: true, config }),
      '/api/system/set_network_config': (req) => {
        posts.push(req);
        const pending = pendingChange();
        config = { ...DHCP, is_dhcp: false, ip_address: '192.168.8.50', pending };
        return envelope(200, { success: true, pending });
      },
      '/api/system/confirm_network_config': (req) => {
        posts.push(req);
        config = { ...config, pending: null };
        return envelope(200, { success: true });
      },
    });
    view = await renderGroup();
    fillStatic(view, {
      'network-ip': '192.168.8.50',
      'network-netmask': '255.255.255.0',
      'network-gateway': '192.168.8.1',
      'network-dns1': '192.168.8.1',
      'network-dns2': '1.1.1.1',
    });
    click(view, 'network-apply');
    await flush();
    expect(posts[0]?.path).toBe('/api/system/set_network_config');
    expect(Object.fromEntries(posts[0]?.query ?? [])).toEqual({
      mode: 'static',
      ip_address: '192.168.8.50',
      netmask: '255.255.255.0',
      gateway: '192.168.8.1',
      dns_servers: '192.168.8.1,1.1.1.1',
    });
    const banner = view.byTestId('network-pending');
    expect(banner?.textContent).toContain('https://192.168.8.50:8443/');
    // a different host than this page's: a link to go to
    expect(banner?.querySelector('a')?.getAttribute('href')).toBe('https://192.168.8.50:8443/');
    const seconds = () => Number(view?.byTestId('network-countdown')?.dataset['seconds']);
    expect(seconds()).toBeGreaterThan(55);
    expect(seconds()).toBeLessThanOrEqual(60);
    expect(view.byTestId('network-address')?.textContent).toBe('192.168.8.50');

    click(view, 'network-confirm');
    await flush();
    expect(posts[1]?.path).toBe('/api/system/confirm_network_config');
    expect(posts[1]?.query.get('id')).toBe('c1');
    expect(view.byTestId('network-pending')).toBeNull();
    expect(view.byTestId('network-reverted')).toBeNull();
  });

  it('takes Keep while the group still re-reads the network after the apply', async () => {
    let config = DHCP;
    // The re-read after the apply is held: on a loaded device it takes a while (the e2e click
    // landed in it and the loading Keep button swallowed it).
    let release: (response: Response) => void = () => undefined;
    const reread = new Promise<Response>((resolve) => (release = resolve));
    let holdReads = false;
    const posts: RecordedRequest[] = [];
    stubFetch({
      '/api/system/get_network_config': () =>
        holdReads ? reread : envelope(200, { success: true, config }),
      '/api/system/set_network_config': (req) => {
        posts.push(req);
        const pending = pendingChange();
        config = { ...DHCP, is_dhcp: false, ip_address: '192.168.8.50', pending };
        holdReads = true;
        return envelope(200, { success: true, pending });
      },
      '/api/system/confirm_network_config': (req) => {
        posts.push(req);
        config = { ...config, pending: null };
        holdReads = false;
        return envelope(200, { success: true });
      },
    });
    view = await renderGroup();
    fillStatic(view, {
      'network-ip': '192.168.8.50',
      'network-netmask': '255.255.255.0',
      'network-gateway': '192.168.8.1',
      'network-dns1': '192.168.8.1',
    });
    click(view, 'network-apply');
    await flush();
    expect(view.byTestId('network-pending')).not.toBeNull();

    click(view, 'network-confirm');
    await flush();
    expect(posts.map((p) => p.path)).toEqual([
      '/api/system/set_network_config',
      '/api/system/confirm_network_config',
    ]);
    expect(view.byTestId('network-pending')).toBeNull();
    // the held read answers now, with what was in force before the Keep: not adopted
    release(envelope(200, { success: true, config: { ...config, pending: pendingChange() } }));
    await flush();
    expect(view.byTestId('network-pending')).toBeNull();
    expect(view.byTestId('network-address')?.textContent).toBe('192.168.8.50');
  });

  it('keeps reading while open: a lease that arrives later shows without a reload', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    let config: NetworkConfigWire = { ...DHCP, ip_address: '', state: 'offline' };
    stubFetch({
      '/api/system/get_network_config': () => envelope(200, { success: true, config }),
    });
    view = await renderGroup();
    config = DHCP;
    await act(async () => {
      await vi.advanceTimersByTimeAsync(NETWORK_REFRESH_MS + 100);
    });
    await vi.waitFor(() =>
      expect(view?.byTestId('network-address')?.textContent).toBe('192.168.8.123'),
    );
  });

  it('says the previous settings came back when the change expires unconfirmed', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    let config = DHCP;
    stubFetch({
      '/api/system/get_network_config': () => envelope(200, { success: true, config }),
      '/api/system/set_network_config': () => {
        const pending = { ...pendingChange(), expires_at: Date.now() + 5000, timeout_s: 5 };
        config = { ...DHCP, is_dhcp: false, ip_address: '192.168.8.50', pending };
        return envelope(200, { success: true, pending });
      },
    });
    view = await renderGroup();
    fillStatic(view, {
      'network-ip': '192.168.8.50',
      'network-netmask': '255.255.255.0',
      'network-gateway': '192.168.8.1',
      'network-dns1': '192.168.8.1',
    });
    click(view, 'network-apply');
    await flush();
    expect(view.byTestId('network-pending')).not.toBeNull();
    // the device reverts by itself at the deadline
    config = DHCP;
    await act(async () => {
      await vi.advanceTimersByTimeAsync(6500);
    });
    await flush();
    await vi.waitFor(() =>
      expect(view?.byTestId('network-address')?.textContent).toBe('192.168.8.123'),
    );
    expect(view.byTestId('network-pending')).toBeNull();
    expect(view.byTestId('network-reverted')?.textContent).toBe(en.settings.pending.reverted);
  });

  it('sends DHCP with the DHCP server DNS, and checks the host name', async () => {
    const posts: RecordedRequest[] = [];
    stubFetch({
      '/api/system/get_network_config': () =>
        envelope(200, { success: true, config: { ...DHCP, is_dhcp: false, protocol: 'static' } }),
      '/api/system/set_network_config': (req) => {
        posts.push(req);
        return envelope(200, { success: true, pending: null });
      },
      '/api/system/set_hostname': (req) => {
        posts.push(req);
        return envelope(200, { success: true, hostname: req.query.get('hostname') });
      },
    });
    view = await renderGroup();
    click(view, 'network-mode-dhcp');
    typeInto(view.byTestId('network-dns1'), '');
    click(view, 'network-apply');
    await flush();
    expect(Object.fromEntries(posts[0]?.query ?? [])).toEqual({ mode: 'dhcp', dns_servers: '' });

    typeInto(view.byTestId('network-hostname'), '-bad-');
    click(view, 'network-hostname-save');
    await flush();
    expect(view.byTestId('network-hostname-error')?.textContent).toBe(
      en.settings.network.hostnameInvalid,
    );
    expect(posts).toHaveLength(1);
    typeInto(view.byTestId('network-hostname'), 'kvm-lab');
    click(view, 'network-hostname-save');
    await flush();
    expect(posts[1]?.path).toBe('/api/system/set_hostname');
    expect(posts[1]?.query.get('hostname')).toBe('kvm-lab');
  });

  it('says why the network cannot be managed and disables the form', async () => {
    stubFetch({
      '/api/system/get_network_config': () =>
        envelope(200, {
          success: true,
          config: {
            ...DHCP,
            available: false,
            unavailable_reason: 'needs root',
            driver: 'disabled',
          },
        }),
    });
    view = await renderGroup();
    expect(view.byTestId('network-unavailable')?.textContent).toContain('needs root');
    expect((view.byTestId('network-apply') as HTMLButtonElement).disabled).toBe(true);
  });
});
