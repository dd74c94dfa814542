import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import en from '../../i18n/en.json';
import { appSummary } from '../../test/apps';
// async act: antd's menu registers its items in a microtask after the click (nextSlice)
import { pressAsync as click, waitForSelector as waitFor } from '../../test/dom';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { applyFingerbot, resetFingerbotForTests } from '../fingerbot/fingerbot-store';
import { applyAtx, resetAtxForTests, useAtx } from '../power/atx-store';
import { resetMsdForTests } from '../storage/msd-store';
import { DeviceTools } from './DeviceTools';

const ATX_ON = {
  enabled: true,
  busy: false,
  leds: { power: true, hdd: false },
  power: 'on',
} as const;

let view: Rendered | undefined;
let requests: RecordedRequest[];
let atxAnswer: () => Response;

beforeEach(() => {
  resetAtxForTests();
  resetFingerbotForTests();
  resetMsdForTests();
  atxAnswer = () => envelope(200, {});
  ({ requests } = stubFetch({
    '/api/atx': () => envelope(200, ATX_ON),
    '/api/atx/click': () => atxAnswer(),
    '/api/fingerbot/exist': () => envelope(200, { exist: false }),
    '/api/msd': () => envelope(200, { enabled: false, online: false }),
    '/api/wol/devices': () => envelope(200, { devices: [] }),
    '/api/apps': () =>
      envelope(200, {
        apps: [appSummary('wireguard', { version: null })],
      }),
    '/api/cloud/status': () =>
      envelope(200, {
        enabled: false,
        bound: false,
        state: 'disabled',
        url: null,
        pinned: null,
        device: { id: null, mac: '02:00:00:00:00:01', serial: 'SN1' },
        account: null,
        bound_at: null,
        replica: null,
        error: null,
      }),
  }));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

async function open() {
  view = await renderPanel(<DeviceTools />);
  return view;
}

describe('DeviceTools', () => {
  it('reads ATX and fingerbot state at start; the fingerbot button needs the fingerbot', async () => {
    const v = await open();
    expect(requests.map((r) => r.path).sort()).toEqual(['/api/atx', '/api/fingerbot/exist']);
    expect(v.byTestId('power-led')?.dataset['on']).toBe('true');
    expect(v.byTestId('toolbar-storage')).not.toBeNull();
    expect(v.byTestId('toolbar-wol')).not.toBeNull();
    expect(v.byTestId('toolbar-fingerbot')).toBeNull();
    act(() => applyFingerbot({ exist: true }));
    expect(v.byTestId('toolbar-fingerbot')).not.toBeNull();
    act(() => applyAtx({ leds: { power: false, hdd: false } }));
    expect(v.byTestId('power-led')?.dataset['on']).toBe('false');
    expect(useAtx.getState().state?.enabled).toBe(true);
  });

  it('opens the terminal at /webterm in a new window', async () => {
    const opened = vi.spyOn(window, 'open').mockImplementation(() => null);
    const v = await open();
    await click(v.byTestId('toolbar-terminal'));
    expect(opened).toHaveBeenCalledWith(
      new URL('/webterm', window.location.href).href,
      '_blank',
      'noopener',
    );
    opened.mockRestore();
  });

  it('opens the storage and wake-on-LAN panels in a drawer', async () => {
    const v = await open();
    await click(v.byTestId('toolbar-storage'));
    expect(await waitFor('[data-testid="storage-panel"]')).not.toBeNull();
    await click(v.byTestId('toolbar-wol'));
    expect(await waitFor('[data-testid="wol-panel"]')).not.toBeNull();
    expect(requests.some((r) => r.path === '/api/wol/devices')).toBe(true);
  });

  it('opens the cloud service panel in a drawer (SPEC 2)', async () => {
    const v = await open();
    await click(v.byTestId('toolbar-cloud'));
    expect(await waitFor('[data-testid="cloud-state"]')).not.toBeNull();
    expect(document.querySelector('.ant-drawer-title')?.textContent).toBe(en.cloud.title);
    expect(requests.some((r) => r.path === '/api/cloud/status')).toBe(true);
  });

  it('opens the apps center in a drawer (SPEC 2)', async () => {
    const v = await open();
    await click(v.byTestId('toolbar-apps'));
    expect(await waitFor('[data-testid="app-card-wireguard"]')).not.toBeNull();
    expect(document.querySelector('[data-testid="app-card-coming-soon"]')).not.toBeNull();
    expect(document.querySelector('.ant-drawer-title')?.textContent).toBe(en.apps.title);
  });

  it('presses reset after the confirmation; a refusal says "reboot failed"', async () => {
    atxAnswer = () =>
      envelope(409, {
        error: 'AtxIsBusyError',
        error_msg: 'Performing another ATX operation, please try again later',
      });
    const v = await open();
    await click(v.byTestId('toolbar-power'));
    await click(await waitFor('[data-testid="power-reset"]'));
    await flush();
    expect(requests.some((r) => r.path === '/api/atx/click')).toBe(false);
    await click(await waitFor('[data-testid="confirm-ok"]'));
    await flush();
    const press = requests.find((r) => r.path === '/api/atx/click');
    expect(press?.method).toBe('POST');
    expect(press?.query.toString()).toBe('button=reset');
    expect(document.body.textContent).toContain(
      `${en.power.rebootFailed}: Performing another ATX operation, please try again later`,
    );
    expect(useAtx.getState().pressing).toBeNull();
  });
});
