import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { NotifyProvider } from '../../components/notify';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, render, type Rendered, renderPanel } from '../../test/render';
import { typeInto } from '../../test/dom';
import { resetInputSessionForTests } from '../input/input-session';
import { resetConfigForTests, useConfig } from '../config/config-store';
import { KeyboardGroup } from './KeyboardGroup';
import { MouseGroup } from './MouseGroup';
import { setConfig } from '../../test/config';

/** Clicks the radio input inside (or at) the element with the test id. */
function clickRadio(view: Rendered, testId: string) {
  const element = view.byTestId(testId);
  const input = element?.tagName === 'INPUT' ? element : element?.querySelector('input');
  act(() => input?.click());
}

function setConfigRoute(requests: RecordedRequest[]) {
  return (req: RecordedRequest) => {
    requests.push(req);
    const body = JSON.parse(req.body ?? '{}') as { config?: unknown };
    return envelope(200, { config: body.config ?? body });
  };
}

describe('MouseGroup', () => {
  let view: Rendered | undefined;
  beforeEach(() => {
    resetConfigForTests();
    resetInputSessionForTests();
  });
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
    document.body.innerHTML = '';
  });

  it('has a test id on every control', async () => {
    setConfig({});
    stubFetch({});
    view = await render(
      <NotifyProvider>
        <MouseGroup />
      </NotifyProvider>,
    );
    for (const id of [
      'settings-group-mouse',
      'settings-mouse-mode',
      'settings-mouse-mode-absolute',
      'settings-mouse-mode-relative',
      'settings-mouse-control',
      'settings-show-cursor',
      'settings-mouse-polling',
      'settings-relative-sense',
      'settings-scroll-rate',
      'settings-reverse-scrolling',
      'settings-reverse-scrolling-STANDARD',
      'settings-reverse-scrolling-BOTH',
      'settings-mouse-jiggle',
    ]) {
      expect(view.byTestId(id), id).not.toBeNull();
    }
    expect(view.byTestId('settings-mouse-mode')?.dataset['value']).toBe('absolute');
  });

  it('switches the mouse mode after the confirmation: set_params, then the config', async () => {
    setConfig({ is_absolute_mouse: true });
    const saved: RecordedRequest[] = [];
    const { requests } = stubFetch({
      '/api/hid/set_params': () => envelope(200, {}),
      '/api/system/set_config': setConfigRoute(saved),
    });
    view = await render(
      <NotifyProvider>
        <MouseGroup />
      </NotifyProvider>,
    );
    clickRadio(view, 'settings-mouse-mode-relative');
    await flush();
    expect(document.querySelector('[data-testid="settings-mouse-mode-confirm"]')).not.toBeNull();
    expect(requests.some((r) => r.path === '/api/hid/set_params')).toBe(false);
    act(() => document.querySelector<HTMLElement>('[data-testid="confirm-ok"]')?.click());
    await flush(10);
    const setParams = requests.find((r) => r.path === '/api/hid/set_params');
    expect(setParams?.method).toBe('POST');
    expect(setParams?.query.get('mouse_output')).toBe('usb_rel');
    expect(useConfig.getState().config?.is_absolute_mouse).toBe(false);
    expect(saved).toHaveLength(1);
  });

  it('does not switch when the confirmation is cancelled', async () => {
    setConfig({});
    const { requests } = stubFetch({});
    view = await render(
      <NotifyProvider>
        <MouseGroup />
      </NotifyProvider>,
    );
    clickRadio(view, 'settings-mouse-mode-relative');
    await flush();
    act(() => document.querySelector<HTMLElement>('[data-testid="confirm-cancel"]')?.click());
    await flush();
    expect(requests).toEqual([]);
    expect(useConfig.getState().config?.is_absolute_mouse).toBe(true);
  });

  it('turns the jiggler on on the device and in the config', async () => {
    setConfig({});
    const saved: RecordedRequest[] = [];
    const { requests } = stubFetch({
      '/api/hid/set_params': () => envelope(200, {}),
      '/api/system/set_config': setConfigRoute(saved),
    });
    view = await render(
      <NotifyProvider>
        <MouseGroup />
      </NotifyProvider>,
    );
    act(() => view?.byTestId('settings-mouse-jiggle')?.click());
    await flush(10);
    const setParams = requests.find((r) => r.path === '/api/hid/set_params');
    expect(setParams?.query.get('jiggler')).toBe('true');
    expect(useConfig.getState().config?.mouse_jiggle).toBe(true);
  });

  it('commits a number on blur, clamped to its range', async () => {
    setConfig({});
    stubFetch({ '/api/system/set_config': setConfigRoute([]) });
    view = await render(
      <NotifyProvider>
        <MouseGroup />
      </NotifyProvider>,
    );
    const input = view.byTestId('settings-mouse-polling') as HTMLInputElement;
    typeInto(input, '150');
    expect(useConfig.getState().config?.mouse_polling).toBe(10); // not before the commit
    act(() => {
      input.focus();
      input.blur();
    });
    await flush();
    expect(useConfig.getState().config?.mouse_polling).toBe(100);
    const sense = view.byTestId('settings-relative-sense') as HTMLInputElement;
    typeInto(sense, '25');
    act(() => sense.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })));
    await flush();
    expect(useConfig.getState().config?.relative_sense).toBe(25);
  });

  it('saves the scrolling direction', async () => {
    setConfig({});
    const saved: RecordedRequest[] = [];
    stubFetch({ '/api/system/set_config': setConfigRoute(saved) });
    view = await render(
      <NotifyProvider>
        <MouseGroup />
      </NotifyProvider>,
    );
    clickRadio(view, 'settings-reverse-scrolling-VERTICAL');
    await flush();
    expect(useConfig.getState().config?.reverse_scrolling).toBe('VERTICAL');
    expect(saved).toHaveLength(1);
  });
});

describe('KeyboardGroup', () => {
  let view: Rendered | undefined;
  beforeEach(() => resetConfigForTests());
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
  });

  it('reads the keymaps from the device and shows the current one', async () => {
    setConfig({ keymap: 'de' });
    const { requests } = stubFetch({
      '/api/hid/keymaps': () =>
        envelope(200, { keymaps: { default: 'en-us', available: ['en-us', 'de', 'fr'] } }),
    });
    view = await renderPanel(<KeyboardGroup />);
    expect(requests.some((r) => r.path === '/api/hid/keymaps')).toBe(true);
    expect(view.byTestId('settings-keymap')).not.toBeNull();
    expect(view.byTestId('settings-keymap-field')?.dataset['value']).toBe('de');
    expect(view.byTestId('settings-keyboard-control')).not.toBeNull();
  });

  it('saves keyboard_control', async () => {
    setConfig({});
    stubFetch({ '/api/system/set_config': setConfigRoute([]) });
    view = await render(
      <NotifyProvider>
        <KeyboardGroup />
      </NotifyProvider>,
    );
    act(() => view?.byTestId('settings-keyboard-control')?.click());
    await flush();
    expect(useConfig.getState().config?.keyboard_control).toBe(false);
  });
});
