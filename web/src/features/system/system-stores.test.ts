/**
 * The settings groups' stores without React: zustand stores made per group, driven through
 * their actions and read with getState (the groups' own tests cover what the user sees).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createStore } from 'zustand/vanilla';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { whileBusy } from './busy';
import { createEdidStore, EdidFormatError } from './edid-store';
import { createNetworkStore, NETWORK_REFRESH_MS, NetworkBusyError } from './network-store';
import { createTimeStore } from './time-store';
import { createWifiStore, WifiBusyError } from './wifi-store';

/** A response the test releases by hand. */
function held() {
  let release: (response: Response) => void = () => undefined;
  const response = new Promise<Response>((resolve) => (release = resolve));
  return { response, release };
}

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('whileBusy', () => {
  it('refuses a second change while one runs, and clears busy when the work fails', async () => {
    const store = createStore<{ busy: boolean }>()(() => ({ busy: false }));
    let fail: (err: Error) => void = () => undefined;
    const first = whileBusy(
      store,
      () => new Error('refused'),
      () => new Promise<void>((_, reject) => (fail = reject)),
    );
    expect(store.getState().busy).toBe(true);
    await expect(
      whileBusy(
        store,
        () => new Error('refused'),
        async () => 1,
      ),
    ).rejects.toThrow('refused');
    fail(new Error('device said no'));
    await expect(first).rejects.toThrow('device said no');
    expect(store.getState().busy).toBe(false);
    await expect(
      whileBusy(
        store,
        () => new Error('refused'),
        async () => 2,
      ),
    ).resolves.toBe(2);
  });
});

describe('the settings groups’ stores', () => {
  it('time: a failed read says so, and each store holds its own state', async () => {
    const { requests } = stubFetch({
      '/api/system/time': () => envelope(500, { error: 'Boom', error_msg: 'no clock' }),
      '/api/system/timezone/list': () => envelope(200, { timezones: ['Europe/Paris'] }),
    });
    const first = createTimeStore();
    const second = createTimeStore();
    await first.load();
    expect(first.getState().loadFailed).toBe(true);
    expect(second.getState().loadFailed).toBe(false);
    // Disposed: its requests are aborted and it changes no more.
    second.dispose();
    await second.load();
    expect(second.getState()).toEqual(second.getInitialState());
    expect(requests.filter((r) => r.path === '/api/system/time')).toHaveLength(2);
  });

  it('EDID: a malformed EDID is refused before the device sees it', async () => {
    const { requests } = stubFetch({});
    const edid = createEdidStore();
    await expect(edid.apply('00ff')).rejects.toBeInstanceOf(EdidFormatError);
    expect(requests).toHaveLength(0);
    expect(edid.getState().busy).toBe(false);
  });

  it('Wi-Fi: one operation at a time, the scan sorted strongest first', async () => {
    const scan = held();
    stubFetch({
      '/api/repeater/scan': () => scan.response,
      '/api/repeater/get_status': () => envelope(200, { adapter: 'none' }),
      '/api/repeater/get_saved_ap_list': () => envelope(200, { ap_list: [] }),
    });
    const wifi = createWifiStore();
    const listeners = vi.fn();
    wifi.subscribe(listeners);
    const scanning = wifi.scan();
    expect(wifi.getState().operation).toBe('scan');
    await expect(wifi.disconnect()).rejects.toBeInstanceOf(WifiBusyError);
    scan.release(
      envelope(200, {
        ap_list: [
          { ssid: 'weak', signal: -80 },
          { ssid: 'strong', signal: -40 },
        ],
      }),
    );
    await scanning;
    expect(wifi.getState().networks?.map((n) => n.ssid)).toEqual(['strong', 'weak']);
    expect(wifi.getState().operation).toBeNull();
    expect(listeners).toHaveBeenCalled();
    // Nothing pending: confirm and revert do nothing.
    await wifi.confirm();
    await wifi.revert();
    wifi.dispose();
  });

  it('network: follow re-reads while idle, refuses a change while one runs, stops on dispose', async () => {
    vi.useFakeTimers();
    const config = { ip_address: '192.168.1.2', hostname: 'kvm', pending: null };
    const apply = held();
    const { requests } = stubFetch({
      '/api/system/get_network_config': () => envelope(200, { config }),
      '/api/system/set_network_config': () => apply.response,
    });
    const reads = () => requests.filter((r) => r.path === '/api/system/get_network_config').length;
    const network = createNetworkStore();
    network.follow();
    await vi.advanceTimersByTimeAsync(0);
    expect(network.getState().config?.hostname).toBe('kvm');
    expect(reads()).toBe(1);
    await vi.advanceTimersByTimeAsync(NETWORK_REFRESH_MS);
    expect(reads()).toBe(2);

    const applying = network.apply({ mode: 'dhcp' });
    expect(network.getState().busy).toBe(true);
    await expect(network.renameHost('other')).rejects.toBeInstanceOf(NetworkBusyError);
    // Busy: the periodic read is skipped.
    await vi.advanceTimersByTimeAsync(NETWORK_REFRESH_MS);
    expect(reads()).toBe(2);
    apply.release(envelope(200, {}));
    await applying;
    expect(network.getState()).toMatchObject({ busy: false, pending: null, reverted: false });
    expect(reads()).toBe(3);

    network.dispose();
    await vi.advanceTimersByTimeAsync(NETWORK_REFRESH_MS * 3);
    expect(reads()).toBe(3);
  });

  it('network: Keep works during the re-read after an apply, and a read begun before a change is not adopted', async () => {
    const pending = {
      id: 'c1',
      kind: 'ethernet',
      expires_at: Date.now() + 60_000,
      timeout_s: 60,
      new_address: 'http://192.168.8.50/',
      previous_address: 'http://192.168.8.123/',
    };
    const before = { ip_address: '192.168.8.123', hostname: 'kvm', pending: null };
    const after = { ip_address: '192.168.8.50', hostname: 'kvm', pending };
    const reads: ReturnType<typeof held>[] = [];
    const { requests } = stubFetch({
      '/api/system/get_network_config': () => {
        const read = held();
        reads.push(read);
        return read.response;
      },
      '/api/system/set_network_config': () => envelope(200, { pending }),
      '/api/system/confirm_network_config': () => envelope(200, {}),
    });
    const network = createNetworkStore();
    // a read under way (the periodic one) when the change is sent
    const early = network.load();
    await vi.waitFor(() => expect(reads).toHaveLength(1));
    const applying = network.apply({ mode: 'dhcp' });
    await vi.waitFor(() => expect(reads).toHaveLength(2));
    expect(network.getState()).toMatchObject({ busy: false, pending: { change: { id: 'c1' } } });
    // the early read answers with the settings from before: the banner stays
    reads[0]!.release(envelope(200, { config: before }));
    await early;
    expect(network.getState().pending?.change.id).toBe('c1');

    // Keep while the apply's own re-read is still out
    const keeping = network.confirm();
    await vi.waitFor(() => expect(reads).toHaveLength(3));
    expect(requests.map((r) => r.path)).toContain('/api/system/confirm_network_config');
    expect(network.getState().pending).toBeNull();
    // that re-read answers with the change still pending: begun before the Keep, not adopted
    reads[1]!.release(envelope(200, { config: after }));
    await applying;
    expect(network.getState().pending).toBeNull();
    reads[2]!.release(envelope(200, { config: { ...after, pending: null } }));
    await keeping;
    expect(network.getState()).toMatchObject({
      busy: false,
      pending: null,
      reverted: false,
      config: { ip_address: '192.168.8.50' },
    });
    network.dispose();
  });

  it('wifi: Keep works while the join still re-reads the status', async () => {
    const pending = {
      id: 'w1',
      kind: 'wifi',
      expires_at: Date.now() + 60_000,
      timeout_s: 60,
      new_address: null,
      previous_address: null,
    };
    const reads: ReturnType<typeof held>[] = [];
    const { requests } = stubFetch({
      '/api/repeater/connect': () => envelope(200, { result: 'success', pending }),
      '/api/repeater/get_status': () => {
        const read = held();
        reads.push(read);
        return read.response;
      },
      '/api/repeater/get_saved_ap_list': () => envelope(200, { ap_list: [] }),
      '/api/system/confirm_network_config': () => envelope(200, {}),
    });
    const wifi = createWifiStore();
    const joining = wifi.join({ ssid: 'KVM-Lab', key: 'secret123' });
    // the join's answer is in (the banner shows) and its status read is still out
    await vi.waitFor(() => expect(reads).toHaveLength(1));
    expect(wifi.getState().pending?.change.id).toBe('w1');
    await wifi.confirm();
    expect(requests.map((r) => r.path)).toContain('/api/system/confirm_network_config');
    expect(wifi.getState().pending).toBeNull();
    reads[0]!.release(envelope(200, { state: 1, ssid: 'KVM-Lab' }));
    await expect(joining).resolves.toMatchObject({ result: 'success' });
    expect(wifi.getState().operation).toBeNull();
    wifi.dispose();
  });
});
