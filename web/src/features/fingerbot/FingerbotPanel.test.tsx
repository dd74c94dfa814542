import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol/settings';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { click, typeInto } from '../../test/dom';
import { resetConfigForTests, useConfig } from '../config/config-store';
import {
  applyFingerbot,
  isValidPressTime,
  pressFingerbot,
  readPressTime,
  resetFingerbotForTests,
  useFingerbot,
  writePressTime,
} from './fingerbot-store';
import FingerbotPanel from './FingerbotPanel';
import { echoSetConfig } from '../../test/config';

let view: Rendered | undefined;
let requests: RecordedRequest[];

beforeEach(() => {
  localStorage.clear();
  resetFingerbotForTests();
  resetConfigForTests();
  useConfig.setState({ config: { ...USER_CONFIG_DEFAULTS }, status: 'ready' });
  ({ requests } = stubFetch({
    '/api/fingerbot/battery': () => envelope(200, { battery: 87 }),
    '/api/fingerbot/local_version': () => envelope(200, { version: '1.0.3' }),
    '/api/fingerbot/click': () => envelope(200, { result: 'success' }),
    '/api/system/set_config': echoSetConfig,
  }));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.useRealTimers();
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

describe('fingerbot store', () => {
  it('follows the fingerbot event', () => {
    expect(useFingerbot.getState().exist).toBeNull();
    applyFingerbot({ exist: true });
    expect(useFingerbot.getState().exist).toBe(true);
    applyFingerbot({} as never);
    expect(useFingerbot.getState().exist).toBe(true);
    applyFingerbot({ exist: false });
    expect(useFingerbot.getState().exist).toBe(false);
  });

  it('press time is 1 to 60 s, remembered in local storage', () => {
    expect([0.9, 1, 60, 60.1, Number.NaN, '5'].map(isValidPressTime)).toEqual([
      false,
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(readPressTime()).toBe(1);
    writePressTime(12);
    expect(localStorage.getItem(STORAGE_KEYS.fingerbotPressTime)).toBe('12');
    expect(readPressTime()).toBe(12);
    writePressTime(99);
    expect(readPressTime()).toBe(12);
    localStorage.setItem(STORAGE_KEYS.fingerbotPressTime, 'junk');
    expect(readPressTime()).toBe(1);
  });

  it('a press waits for 8 s plus the press time', async () => {
    vi.useFakeTimers();
    let signal: AbortSignal | undefined;
    vi.stubGlobal(
      'fetch',
      vi.fn((_url: string, init: RequestInit) => {
        signal = init.signal ?? undefined;
        // Never answers; rejects when aborted, as fetch does.
        return new Promise((_resolve, reject) => {
          signal?.addEventListener('abort', () =>
            reject(new DOMException('aborted', 'AbortError')),
          );
        });
      }),
    );
    const press = pressFingerbot(2.5, 'HIGH').catch((err: unknown) => err);
    await vi.advanceTimersByTimeAsync(10_499);
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(signal?.aborted).toBe(true);
    await expect(press).resolves.toMatchObject({ reason: 'timeout' });
  });
});

describe('FingerbotPanel', () => {
  async function open() {
    view = await renderPanel(<FingerbotPanel />);
    return view;
  }

  it('shows battery and version, presses with the press time in ms and the strength', async () => {
    localStorage.setItem(STORAGE_KEYS.fingerbotPressTime, '3');
    const v = await open();
    expect(v.byTestId('fingerbot-panel')).not.toBeNull();
    expect(v.byTestId('fingerbot-battery')?.textContent).toBe('87%');
    expect(v.byTestId('fingerbot-version')?.textContent).toBe('1.0.3');
    click(v.byTestId('fingerbot-press'));
    await flush();
    const press = requests.find((r) => r.path === '/api/fingerbot/click');
    expect(press?.method).toBe('GET');
    expect(press?.query.toString()).toBe('press_time=3000&angle_enum=1');
  });

  it('saves the strength as the user setting fingerbot_strength', async () => {
    const v = await open();
    const high = v.byTestId('fingerbot-strength-HIGH');
    click(high?.tagName === 'INPUT' ? high : high?.querySelector('input'));
    await flush();
    const save = requests.find((r) => r.path === '/api/system/set_config');
    expect(
      (JSON.parse(save?.body ?? '{}') as { fingerbot_strength?: string }).fingerbot_strength,
    ).toBe('HIGH');
    expect(v.byTestId('fingerbot-strength')?.dataset['value']).toBe('HIGH');
    click(v.byTestId('fingerbot-press'));
    await flush();
    expect(requests.find((r) => r.path === '/api/fingerbot/click')?.query.get('angle_enum')).toBe(
      '2',
    );
  });

  it('refuses a press time out of 1-60 and remembers a valid one', async () => {
    const v = await open();
    typeInto(v.byTestId('fingerbot-press-time'), '');
    await flush();
    expect(v.byTestId('fingerbot-press')?.hasAttribute('disabled')).toBe(true);
    typeInto(v.byTestId('fingerbot-press-time'), '20');
    await flush();
    expect(v.byTestId('fingerbot-press')?.hasAttribute('disabled')).toBe(false);
    expect(localStorage.getItem(STORAGE_KEYS.fingerbotPressTime)).toBe('20');
    // Out of range: the field does not take it, the remembered time stays.
    typeInto(v.byTestId('fingerbot-press-time'), '75');
    await flush();
    expect(localStorage.getItem(STORAGE_KEYS.fingerbotPressTime)).toBe('20');
    expect(v.byTestId('fingerbot-upgrade')?.hasAttribute('disabled')).toBe(true);
  });
});
