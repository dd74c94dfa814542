import { describe, expect, it } from 'vitest';
import {
  CAPTURE_INDICATOR_STATES,
  deriveCaptureIndicator,
  type CaptureIndicatorInput,
  type CaptureIndicatorState,
} from './capture-indicator';

const HID_OK = { online: true, busy: false, keyboard: { online: true }, mouse: { online: true } };

const base: CaptureIndicatorInput = {
  hid: HID_OK,
  connected: true,
  focused: false,
  hovered: false,
  locked: false,
  keyboardControl: true,
  mouseControl: true,
};

const derive = (patch: Partial<CaptureIndicatorInput>) =>
  deriveCaptureIndicator({ ...base, ...patch });

describe('deriveCaptureIndicator (SPEC 4, 7 states)', () => {
  it('reaches every one of the 7 states', () => {
    const cases: Array<[CaptureIndicatorState, Partial<CaptureIndicatorInput>]> = [
      ['free', {}],
      ['free-inactive', { hid: { ...HID_OK, busy: true } }],
      ['free-offline', { hid: { ...HID_OK, online: false } }],
      ['captured-offline', { focused: true, hid: null }],
      ['captured-active', { hovered: true }],
      ['captured-inactive', { locked: true, hid: { ...HID_OK, mouse: { online: false } } }],
      ['disabled', { keyboardControl: false, mouseControl: false, focused: true }],
    ];
    for (const [state, patch] of cases) expect(derive(patch), state).toBe(state);
    expect(new Set(cases.map(([s]) => s))).toEqual(new Set(CAPTURE_INDICATOR_STATES));
  });

  it('is offline while the connection is lost or before any HID state', () => {
    expect(derive({ connected: false })).toBe('free-offline');
    expect(derive({ hid: null })).toBe('free-offline');
    expect(derive({ connected: false, hovered: true })).toBe('captured-offline');
  });

  it('is inactive when a device in use is offline, not when an unused one is', () => {
    const noKeyboard = { hid: { ...HID_OK, keyboard: { online: false } } };
    expect(derive(noKeyboard)).toBe('free-inactive');
    expect(derive({ ...noKeyboard, keyboardControl: false })).toBe('free');
    const noMouse = { hid: { ...HID_OK, mouse: { online: false } } };
    expect(derive({ ...noMouse, mouseControl: false, focused: true })).toBe('captured-active');
  });

  it('counts focus only with keyboard control and the pointer only with mouse control', () => {
    expect(derive({ focused: true })).toBe('captured-active');
    expect(derive({ focused: true, keyboardControl: false })).toBe('free');
    expect(derive({ hovered: true, mouseControl: false })).toBe('free');
    expect(derive({ locked: true, mouseControl: false, focused: true })).toBe('captured-active');
  });

  it('says busy (the output switch) is inactive even while captured', () => {
    expect(derive({ hovered: true, hid: { ...HID_OK, busy: true } })).toBe('captured-inactive');
  });
});
