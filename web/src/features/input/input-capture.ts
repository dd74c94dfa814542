/**
 * Wires the keyboard and mouse captures (lib/input) to the remote screen: the area of the video
 * view takes the keyboard focus, the captures follow the user settings and the HID state, and
 * the capture store says whether input is captured (SPEC 4 indicator). React only calls the hook.
 */
import { useEffect, type RefObject } from 'react';
import type { Orientation } from '@kvm/protocol/enums';
import type { HidState } from '@kvm/protocol/hid/state';
import type { UserConfig } from '@kvm/protocol/settings';
import { detectPlatform, KeyboardCapture } from '../../lib/input/keyboard-capture';
import type { HidSender } from '../../lib/input/hid-sender';
import { MouseCapture, type MouseSettings, type PointMapper } from '../../lib/input/mouse-capture';
import { useConfig } from '../config/config-store';
import { clientPointToAbsolute } from '../../lib/geometry';
import { hidSender, loadHid, setCapture, useHid } from './input-session';

/**
 * Client point → remote absolute position through the picture's element (a <video> or a
 * <canvas> in the area): its bounding box is where the rotated picture shows, the rest of the
 * area is letterbox (clamped to the edges).
 */
export function screenPointMapper(area: HTMLElement, orientation: () => Orientation): PointMapper {
  return (point) => {
    const screen = area.querySelector<HTMLElement>('video, canvas');
    if (!screen) return null;
    const rect = screen.getBoundingClientRect();
    if (!(rect.width > 0 && rect.height > 0)) return null;
    return clientPointToAbsolute(point, rect, orientation());
  };
}

/**
 * The mouse settings in force: the device's actual mode when known (a relative device ignores
 * absolute moves), else the user's `is_absolute_mouse`; the rest from the user config.
 */
export function mouseSettingsOf(
  config: Partial<UserConfig> | null,
  hid: { mouse?: Partial<HidState['mouse']> } | null,
): MouseSettings {
  return {
    absolute: hid?.mouse?.absolute ?? config?.is_absolute_mouse ?? true,
    pollingMs: config?.mouse_polling ?? 10,
    relativeSense: config?.relative_sense ?? 10,
    scrollRate: config?.scroll_rate ?? 5,
    reverseScrolling: config?.reverse_scrolling ?? 'STANDARD',
  };
}

export interface InputCaptureDeps {
  sender?: HidSender;
  document?: Document;
  window?: Window;
  navigator?: Navigator;
}

/** Attaches both captures to the area; returns the detach function. */
export function attachInputCapture(area: HTMLElement, deps: InputCaptureDeps = {}): () => void {
  const sender = deps.sender ?? hidSender;
  const doc = deps.document ?? document;
  const win = deps.window ?? window;
  const nav = deps.navigator ?? navigator;

  // The keyboard is captured while the screen has the focus: it must be focusable.
  if (!area.hasAttribute('tabindex')) area.tabIndex = 0;
  area.style.outline = 'none';

  const keyboard = new KeyboardCapture({ sink: sender, platform: detectPlatform(nav) });
  const mouse = new MouseCapture({
    sink: sender,
    toAbsolute: screenPointMapper(area, () => useConfig.getState().config?.orientation ?? 0),
  });

  const apply = () => {
    const config = useConfig.getState().config;
    keyboard.setEnabled(config?.keyboard_control ?? true);
    mouse.setEnabled(config?.mouse_control ?? true);
    mouse.setSettings(mouseSettingsOf(config, useHid.getState().state));
  };
  apply();
  const offConfig = useConfig.subscribe(apply);
  const offHid = useHid.subscribe(apply);

  const detachKeyboard = keyboard.attach(area, { window: win, document: doc, navigator: nav });
  const detachMouse = mouse.attach(area, { document: doc });

  const onFocus = () => setCapture({ focused: true });
  const onBlur = () => setCapture({ focused: false });
  const onEnter = () => setCapture({ hovered: true });
  const onLeave = () => setCapture({ hovered: false });
  const onLockChange = () => setCapture({ locked: doc.pointerLockElement === area });
  area.addEventListener('focus', onFocus);
  area.addEventListener('blur', onBlur);
  area.addEventListener('mouseenter', onEnter);
  area.addEventListener('mouseleave', onLeave);
  doc.addEventListener('pointerlockchange', onLockChange);
  setCapture({ focused: doc.activeElement === area, locked: doc.pointerLockElement === area });

  void loadHid();

  return () => {
    offConfig();
    offHid();
    detachKeyboard();
    detachMouse();
    mouse.dispose();
    area.removeEventListener('focus', onFocus);
    area.removeEventListener('blur', onBlur);
    area.removeEventListener('mouseenter', onEnter);
    area.removeEventListener('mouseleave', onLeave);
    doc.removeEventListener('pointerlockchange', onLockChange);
    setCapture({ focused: false, hovered: false, locked: false });
  };
}

/** Captures keyboard and mouse on the remote screen's area while it is mounted. */
export function useInputCapture(areaRef: RefObject<HTMLElement | null>): void {
  useEffect(() => {
    const area = areaRef.current;
    if (!area) return;
    return attachInputCapture(area);
  }, [areaRef]);
}
