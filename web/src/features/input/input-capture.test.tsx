import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { decodeHidFrame, type HidEvent } from '@kvm/protocol/hid/codec';
import type { HidState } from '@kvm/protocol/hid/state';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol/settings';
import en from '../../i18n/en.json';
import { HidSender } from '../../lib/input/hid-sender';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { render, type Rendered } from '../../test/render';
import { resetConfigForTests } from '../config/config-store';
import { CaptureIndicator } from './CaptureIndicator';
import { KeyboardStatus, MouseStatus } from './HidStatus';
import { attachInputCapture, mouseSettingsOf, screenPointMapper } from './input-capture';
import { applyHid, resetInputSessionForTests, useCapture, useHid } from './input-session';
import { setConfig } from '../../test/config';

const HID: HidState = {
  enabled: true,
  online: true,
  busy: false,
  connected: true,
  keyboard: {
    online: true,
    leds: { caps: true, num: false, scroll: false },
    outputs: { available: [], active: '' },
  },
  mouse: {
    online: true,
    absolute: true,
    outputs: { available: ['usb', 'usb_rel'], active: 'usb' },
  },
  jiggler: { enabled: false, active: false, interval: 60, schedule: [] },
};

/** A sender whose frames are decoded back into events (the event socket is the route). */
function recordingSender() {
  const events: Array<HidEvent | number> = [];
  const sender = new HidSender({
    channel: () => null,
    socket: {
      sendBinary: (frame) => {
        events.push(frame.length === 1 ? frame[0]! : (decodeHidFrame(frame) ?? -1));
        return true;
      },
    },
  });
  return { sender, events };
}

function area(): { element: HTMLElement; screen: HTMLElement } {
  const element = document.createElement('div');
  const screen = document.createElement('canvas');
  screen.getBoundingClientRect = () => ({ left: 0, top: 0, width: 101, height: 51 }) as DOMRect;
  element.appendChild(screen);
  document.body.appendChild(element);
  return { element, screen };
}

describe('attachInputCapture', () => {
  let detach: (() => void) | undefined;
  let sender: HidSender | undefined;
  beforeEach(() => {
    resetConfigForTests();
    resetInputSessionForTests();
    stubFetch({ '/api/hid': () => envelope(200, HID) });
  });
  afterEach(() => {
    detach?.();
    detach = undefined;
    sender?.dispose();
    vi.unstubAllGlobals();
    document.body.innerHTML = '';
  });

  it('makes the area focusable and sends its keys', () => {
    setConfig({});
    const rec = recordingSender();
    sender = rec.sender;
    const { element } = area();
    detach = attachInputCapture(element, { sender });
    expect(element.tabIndex).toBe(0);
    element.dispatchEvent(new KeyboardEvent('keydown', { code: 'KeyA', cancelable: true }));
    element.dispatchEvent(new KeyboardEvent('keyup', { code: 'KeyA', cancelable: true }));
    expect(rec.events).toContainEqual({ type: 'key', key: 'KeyA', state: true, finish: false });
    expect(rec.events).toContainEqual({ type: 'key', key: 'KeyA', state: false, finish: false });
  });

  it('follows keyboard_control and mouse_control', () => {
    setConfig({ keyboard_control: false, mouse_control: false });
    const rec = recordingSender();
    sender = rec.sender;
    const { element } = area();
    detach = attachInputCapture(element, { sender });
    element.dispatchEvent(new KeyboardEvent('keydown', { code: 'KeyA' }));
    element.dispatchEvent(new MouseEvent('mousedown', { button: 0 }));
    expect(rec.events.filter((e) => typeof e !== 'number')).toEqual([]);
    act(() => setConfig({ keyboard_control: true, mouse_control: false }));
    element.dispatchEvent(new KeyboardEvent('keydown', { code: 'KeyB' }));
    expect(rec.events).toContainEqual({ type: 'key', key: 'KeyB', state: true, finish: false });
  });

  it('maps the pointer through the picture element and clicks there', () => {
    setConfig({});
    const rec = recordingSender();
    sender = rec.sender;
    const { element } = area();
    detach = attachInputCapture(element, { sender });
    element.dispatchEvent(new MouseEvent('mousedown', { button: 0, clientX: 50, clientY: 25 }));
    expect(rec.events.slice(0, 2)).toEqual([
      { type: 'mouse_move', x: 0, y: 0 },
      { type: 'mouse_button', button: 'left', state: true },
    ]);
  });

  it('tracks focus, hover and lock for the indicator, and resets on detach', () => {
    setConfig({});
    const { element } = area();
    detach = attachInputCapture(element, { sender: recordingSender().sender });
    element.focus();
    element.dispatchEvent(new MouseEvent('mouseenter'));
    expect(useCapture.getState()).toEqual({ focused: true, hovered: true, locked: false });
    element.dispatchEvent(new MouseEvent('mouseleave'));
    expect(useCapture.getState().hovered).toBe(false);
    detach();
    detach = undefined;
    expect(useCapture.getState()).toEqual({ focused: false, hovered: false, locked: false });
  });

  it('loads the HID state', async () => {
    setConfig({});
    const { element } = area();
    detach = attachInputCapture(element, { sender: recordingSender().sender });
    await vi.waitFor(() => expect(useHid.getState().state?.online).toBe(true));
  });
});

describe('mouseSettingsOf', () => {
  it('takes the mode from the device when known, else from the setting', () => {
    const config = { ...USER_CONFIG_DEFAULTS, is_absolute_mouse: true, mouse_polling: 40 };
    expect(mouseSettingsOf(config, null)).toEqual({
      absolute: true,
      pollingMs: 40,
      relativeSense: 10,
      scrollRate: 5,
      reverseScrolling: 'STANDARD',
    });
    expect(mouseSettingsOf(config, { mouse: { absolute: false } }).absolute).toBe(false);
    expect(mouseSettingsOf(null, null).absolute).toBe(true);
  });
});

describe('screenPointMapper', () => {
  it('uses the rotated picture element box and the orientation', () => {
    const { element } = area();
    const map = screenPointMapper(element, () => 180);
    expect(map({ x: 0, y: 0 })).toEqual({ x: 32767, y: 32767 });
    expect(map({ x: 500, y: -10 })).toEqual({ x: -32768, y: 32767 }); // clamped from the letterbox
    element.innerHTML = '';
    expect(map({ x: 0, y: 0 })).toBeNull();
    document.body.innerHTML = '';
  });
});

describe('HID state in the status items and the indicator', () => {
  let view: Rendered | undefined;
  beforeEach(() => {
    resetConfigForTests();
    resetInputSessionForTests();
  });
  afterEach(() => view?.unmount());

  it('shows unknown until the HID state arrives, then mouse mode and keyboard LEDs', async () => {
    view = await render(
      <>
        <MouseStatus />
        <KeyboardStatus />
      </>,
    );
    expect(view.byTestId('status-mouse')?.textContent).toBe(
      `${en.status.mouse}: ${en.status.unknown}`,
    );
    expect(view.byTestId('status-keyboard')?.dataset['online']).toBe('unknown');
    act(() => applyHid(HID));
    const mouse = view.byTestId('status-mouse');
    expect(mouse?.textContent).toBe(
      `${en.status.mouse}: ${en.status.online} · ${en.status.absolute}`,
    );
    expect(mouse?.dataset['absolute']).toBe('true');
    const keyboard = view.byTestId('status-keyboard');
    expect(keyboard?.dataset['online']).toBe('true');
    expect(keyboard?.dataset['caps']).toBe('true');
    expect(view.byTestId('status-led-caps')?.dataset['on']).toBe('true');
    expect(view.byTestId('status-led-num')?.dataset['on']).toBe('false');
    // kvmd sends partial events: merged.
    act(() => applyHid({ mouse: { absolute: false } } as Partial<HidState>));
    expect(view.byTestId('status-mouse')?.textContent).toBe(
      `${en.status.mouse}: ${en.status.online} · ${en.status.relative}`,
    );
    expect(useHid.getState().state?.mouse.online).toBe(true);
    act(() => applyHid({ keyboard: { ...HID.keyboard, online: false } }));
    expect(view.byTestId('status-keyboard')?.textContent).toBe(
      `${en.status.keyboard}: ${en.status.offline}`,
    );
  });

  it('renders the capture indicator with its state', async () => {
    setConfig({});
    view = await render(<CaptureIndicator />);
    const indicator = () => view?.byTestId('capture-indicator');
    expect(indicator()?.dataset['state']).toBe('free-offline');
    act(() => applyHid(HID));
    expect(indicator()?.dataset['state']).toBe('free');
    act(() => useCapture.setState({ hovered: true }));
    expect(indicator()?.dataset['state']).toBe('captured-active');
    act(() => setConfig({ keyboard_control: false, mouse_control: false }));
    expect(indicator()?.dataset['state']).toBe('disabled');
    expect(indicator()?.getAttribute('aria-label')).toContain(en.input.state.disabled);
  });
});
