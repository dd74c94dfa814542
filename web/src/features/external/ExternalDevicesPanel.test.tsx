import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol/settings';
import { noSwitchState, type SwitchState } from '@kvm/protocol/switch';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest, type Responder } from '../../test/fetch-stub';
import { pressAsync as press, waitForSelector as waitFor } from '../../test/dom';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { resetConfigForTests, useConfig } from '../config/config-store';
import { applyFingerbot, resetFingerbotForTests } from '../fingerbot/fingerbot-store';
import { resetAtxForTests, useAtx } from '../power/atx-store';
import ExternalDevicesPanel from './ExternalDevicesPanel';
import { switchView } from './switch-store';

const ATX = {
  enabled: true,
  busy: false,
  acts: { power: false, reset: false },
  leds: { power: true, hdd: false },
  power: 'on',
} as const;

/** kvmd's state with one unit of four ports, port 1 active, a signal on ports 1 and 3. */
function oneUnit(): SwitchState {
  const state = noSwitchState();
  state.model.units = [{ firmware: { version: 9, devbuild: false } }];
  state.model.ports = [0, 1, 2, 3].map((ch) => ({
    unit: 0,
    channel: ch,
    name: ch === 1 ? 'Build server' : '',
    id: String(ch + 1),
  }));
  state.summary = { active_port: 0, active_id: '1', synced: true };
  state.video.links = [true, false, true, false];
  return state;
}

let view: Rendered | undefined;
let requests: RecordedRequest[];
let routes: Record<string, Responder>;

beforeEach(() => {
  resetAtxForTests();
  resetFingerbotForTests();
  resetConfigForTests();
  useConfig.setState({ config: { ...USER_CONFIG_DEFAULTS }, status: 'ready' });
  routes = {
    '/api/atx': () => envelope(200, ATX),
    '/api/atx/click': () => envelope(200, {}),
    '/api/fingerbot/exist': () => envelope(200, { exist: false }),
    '/api/fingerbot/battery': () => envelope(200, { battery: 64 }),
    '/api/fingerbot/local_version': () => envelope(200, { version: '1.0.3' }),
    // The default device: no /api/switch route at all (404 in the envelope).
  };
  ({ requests } = stubFetch(routes));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

async function open() {
  view = await renderPanel(<ExternalDevicesPanel />);
  return view;
}

describe('ExternalDevicesPanel', () => {
  it('reads the ATX, fingerbot and switch states and says what the device lacks', async () => {
    const v = await open();
    expect(requests.map((r) => r.path).sort()).toEqual([
      '/api/atx',
      '/api/fingerbot/exist',
      '/api/switch',
    ]);
    expect(v.byTestId('external-atx-led-power')?.dataset['on']).toBe('true');
    expect(v.byTestId('external-atx-led-hdd')?.dataset['on']).toBe('false');
    expect(v.byTestId('external-fingerbot-none')?.textContent).toBe(en.external.fingerbotNone);
    expect(v.byTestId('external-fingerbot')?.textContent).toContain(en.external.fingerbotNoneHint);
    expect(v.byTestId('external-switch-none')?.textContent).toBe(en.external.switchNone);
  });

  it('ATX: the power menu control, pressing reset after the same confirmation', async () => {
    const v = await open();
    await press(v.byTestId('external-atx-reset'));
    expect(document.body.textContent).toContain(en.power.confirmReset);
    expect(requests.some((r) => r.path === '/api/atx/click')).toBe(false);
    await press(await waitFor('[data-testid="confirm-ok"]'));
    await flush();
    const click = requests.find((r) => r.path === '/api/atx/click');
    expect(click?.method).toBe('POST');
    expect(click?.query.toString()).toBe('button=reset');
    expect(document.body.textContent).toContain(en.power.done);
    expect(useAtx.getState().pressing).toBeNull();
  });

  it('ATX: a target without an ATX board says so and offers no button', async () => {
    routes['/api/atx'] = () => envelope(200, { ...ATX, enabled: false });
    const v = await open();
    expect(v.byTestId('external-atx-none')?.textContent).toBe(en.power.disabled);
    expect(v.byTestId('external-atx-power')).toBeNull();
  });

  it('ATX: a GPIO problem shows and disables the buttons', async () => {
    routes['/api/atx'] = () => envelope(200, { ...ATX, problem: 'gpiochip0 line 27 is held' });
    const v = await open();
    expect(v.byTestId('external-atx-problem')?.textContent).toContain('gpiochip0 line 27 is held');
    expect((v.byTestId('external-atx-power') as HTMLButtonElement).disabled).toBe(true);
  });

  it('fingerbot: once paired, the fingerbot panel itself with its calls', async () => {
    const v = await open();
    expect(v.byTestId('fingerbot-panel')).toBeNull();
    act(() => applyFingerbot({ exist: true }));
    await flush();
    expect(
      v.byTestId('external-fingerbot')?.querySelector('[data-testid="fingerbot-panel"]'),
    ).not.toBeNull();
    expect(requests.some((r) => r.path === '/api/fingerbot/battery')).toBe(true);
    expect(v.byTestId('external-fingerbot-none')).toBeNull();
  });

  it('switch: an empty chain (pikvm_switch on, no unit) is "no KVM switch attached"', async () => {
    routes['/api/switch'] = () => envelope(200, noSwitchState());
    const v = await open();
    expect(v.byTestId('external-switch-none')?.textContent).toBe(en.external.switchNone);
  });

  it('switch: lists the ports and the active one, and switches with set_active', async () => {
    let active = 0;
    routes['/api/switch'] = () => {
      const state = oneUnit();
      state.summary.active_port = active;
      return envelope(200, state);
    };
    routes['/api/switch/set_active'] = (req) => {
      active = Number(req.query.get('port'));
      return envelope(200, {});
    };
    const v = await open();
    expect(v.byTestId('external-switch-port-1')?.dataset['active']).toBe('true');
    expect(v.byTestId('external-switch-port-2')?.textContent).toContain('Port 2 · Build server');
    expect(v.byTestId('external-switch-port-2')?.textContent).toContain(en.external.switchNoSignal);
    await press(v.byTestId('external-switch-port-2'));
    await flush();
    const set = requests.find((r) => r.path === '/api/switch/set_active');
    expect(set?.method).toBe('POST');
    expect(set?.query.get('port')).toBe('1');
    expect(v.byTestId('external-switch-port-2')?.dataset['active']).toBe('true');
    expect(v.byTestId('external-switch-port-1')?.dataset['active']).toBe('false');
  });

  it('switch: a failed read is an error with the reason, not "none"', async () => {
    routes['/api/switch'] = () =>
      envelope(500, { error: 'SwitchError', error_msg: 'The switch did not answer' });
    const v = await open();
    expect(v.byTestId('external-switch-error')?.textContent).toContain('The switch did not answer');
    expect(v.byTestId('external-switch-none')).toBeNull();
  });
});

describe('switchView', () => {
  it('reads kvmd ports defensively', () => {
    const state = oneUnit();
    state.model.ports = [null, { id: 7 }];
    state.video.links = [];
    const view = switchView(state);
    expect(view).toEqual({
      status: 'ready',
      ports: [
        { id: '1', name: '', video: null },
        { id: '2', name: '', video: null },
      ],
      active: 0,
      synced: true,
    });
  });
});
