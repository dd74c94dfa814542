import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import type { KeymapLayout } from '@kvm/protocol/hid/state';
import type { UserConfig } from '@kvm/protocol/settings';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import { click, typeInto } from '../../test/dom';
import { CTRL_ALT_DEL, recordKeys } from '../../test/keys';
import { NotifyProvider } from '../../components/notify';
import { resetConfigForTests } from '../config/config-store';
import AddShortcutDialog from './AddShortcutDialog';
import { virtualKeyInput } from './keyboard-session';
import PasteDialog from './PasteDialog';
import { ShortcutsMenu } from './ShortcutsMenu';
import { VirtualKeyboardHost } from './VirtualKeyboardHost';
import {
  resetVirtualKeyboardForTests,
  setKeyboardMode,
  useVirtualKeyboard,
} from './virtual-keyboard-store';
import { echoSetConfig, setConfig } from '../../test/config';

const FR: KeymapLayout = {
  name: 'fr',
  keys: {
    KeyQ: { base: 'a', shift: 'A', altgr: null, shiftAltgr: null },
    Digit2: { base: 'é', shift: '2', altgr: '~', shiftAltgr: null },
  },
};

function pointer(el: HTMLElement | null, type: 'pointerdown' | 'pointerup') {
  if (!el) throw new Error('no element');
  act(() => {
    el.dispatchEvent(new PointerEvent(type, { bubbles: true, button: 0, pointerId: 1 }));
  });
}

function tap(view: Rendered, code: string) {
  const key = view.byTestId(`vk-${code}`);
  pointer(key, 'pointerdown');
  pointer(key, 'pointerup');
}

/** The keyboard is lazy-loaded: its first import takes longer than a few ticks. */
async function waitForTestId(id: string): Promise<HTMLElement> {
  for (let i = 0; i < 200; i += 1) {
    const el = document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
    if (el) return el;
    await flush(1);
  }
  throw new Error(`${id} never appeared`);
}

let view: Rendered | undefined;
let requests: RecordedRequest[];

beforeEach(() => {
  localStorage.clear();
  resetConfigForTests();
  resetVirtualKeyboardForTests();
  setConfig({ keymap: 'fr' });
  ({ requests } = stubFetch({
    '/api/hid/keymap': () => envelope(200, FR),
    '/api/system/set_config': echoSetConfig,
    '/api/hid/print': () => envelope(200, { typed: 4, unmapped: ['€', '\u200b'] }),
  }));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  virtualKeyInput.releaseAll();
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe('VirtualKeyboard', () => {
  it('is not drawn while closed', async () => {
    view = await render(<VirtualKeyboardHost />);
    await flush();
    expect(view.byTestId('virtual-keyboard')).toBeNull();
  });

  it('draws the PC-105 keys with the caps of the keymap setting', async () => {
    setKeyboardMode('fixed');
    view = await render(<VirtualKeyboardHost />);
    const panel = await waitForTestId('virtual-keyboard');
    await flush();
    expect(panel?.dataset.mode).toBe('fixed');
    expect(requests.find((r) => r.path === '/api/hid/keymap')?.query.get('name')).toBe('fr');
    for (const code of ['Escape', 'F12', 'IntlBackslash', 'ContextMenu', 'Pause', 'ArrowUp']) {
      expect(view.byTestId(`vk-${code}`), code).not.toBeNull();
    }
    expect(view.byTestId('vk-KeyQ')?.textContent).toBe('A');
    expect(view.byTestId('vk-Digit2')?.textContent).toBe('2é~');
    // A key the layout lacks shows its web name; named keys their keycap name.
    expect(view.byTestId('vk-KeyW')?.textContent).toBe('KeyW');
    expect(view.byTestId('vk-MetaLeft')?.textContent).toBe('Win');
  });

  it('sends Ctrl+Alt+Del from latched clicks, and shows the latched level', async () => {
    const events = recordKeys();
    setKeyboardMode('floating');
    view = await render(<VirtualKeyboardHost />);
    expect((await waitForTestId('virtual-keyboard')).dataset.mode).toBe('floating');
    await flush();
    tap(view, 'ShiftLeft');
    expect(view.byTestId('vk-ShiftLeft')?.getAttribute('aria-pressed')).toBe('true');
    expect(view.byTestId('vk-Digit2')?.textContent).toBe('2');
    tap(view, 'ShiftLeft');
    tap(view, 'ControlLeft');
    tap(view, 'AltLeft');
    tap(view, 'Delete');
    expect(events).toEqual(['ShiftLeft:down', 'ShiftLeft:up', ...CTRL_ALT_DEL]);
    expect(view.byTestId('vk-ControlLeft')?.getAttribute('aria-pressed')).toBe('false');
  });

  it('closes from its own button and releases what it latched', async () => {
    const events = recordKeys();
    setKeyboardMode('fixed');
    view = await render(<VirtualKeyboardHost />);
    await waitForTestId('virtual-keyboard');
    tap(view, 'ControlLeft');
    click(view.byTestId('vk-close'));
    await flush();
    expect(view.byTestId('virtual-keyboard')).toBeNull();
    expect(useVirtualKeyboard.getState().chosen).toBe('closed');
    expect(events).toEqual(['ControlLeft:down', 'ControlLeft:up']);
  });
});

describe('AddShortcutDialog', () => {
  async function open() {
    const onClose = vi.fn();
    view = await render(
      <NotifyProvider>
        <VirtualKeyboardHost />
        <AddShortcutDialog onClose={onClose} />
      </NotifyProvider>,
    );
    await waitForTestId('virtual-keyboard');
    await waitForTestId('shortcut-add-dialog');
    return onClose;
  }

  it('forces the closed keyboard to floating and picks keys on it without typing them', async () => {
    const events = recordKeys();
    const onClose = await open();
    expect(view?.byTestId('shortcut-add-dialog')).not.toBeNull();
    expect(view?.byTestId('virtual-keyboard')?.dataset.mode).toBe('floating');
    if (!view) return;
    tap(view, 'ControlLeft');
    tap(view, 'ShiftLeft');
    tap(view, 'KeyQ');
    expect(view.byTestId('shortcut-keys')?.dataset.keys).toBe('ControlLeft,ShiftLeft,KeyQ');
    expect(events).toEqual([]);

    click(view.byTestId('shortcut-save'));
    await flush();
    const write = requests.find((r) => r.path === '/api/system/set_config');
    const body = JSON.parse(write?.body ?? '{}') as UserConfig;
    expect(body.shortcuts).toEqual([{ keys: ['ControlLeft', 'ShiftLeft', 'KeyQ'] }]);
    expect(onClose).toHaveBeenCalledOnce();
  });

  it('shows SPEC 5 problems inline and does not save', async () => {
    await open();
    if (!view) return;
    tap(view, 'KeyC');
    click(view.byTestId('shortcut-save'));
    await flush();
    expect(view.byTestId('shortcut-error')?.textContent).toContain('A shortcut has 2 to 4 keys');
    tap(view, 'KeyC');
    expect(view.byTestId('shortcut-error')?.textContent).toContain(
      en.shortcuts.errors.duplicateKey,
    );
    click(view.byTestId('shortcut-clear'));
    tap(view, 'AltLeft');
    tap(view, 'F4');
    expect(view.byTestId('shortcut-error')?.textContent).toContain(en.shortcuts.errors.exists);
    expect(requests.some((r) => r.path === '/api/system/set_config')).toBe(false);
  });

  it('ends the capture when it closes', async () => {
    await open();
    expect(useVirtualKeyboard.getState().adding).toBe(true);
    view?.unmount();
    view = undefined;
    expect(useVirtualKeyboard.getState().adding).toBe(false);
    expect(virtualKeyInput.capturing).toBe(false);
  });
});

describe('PasteDialog', () => {
  it('refuses too long a text without calling the device', async () => {
    view = await render(<PasteDialog onClose={() => undefined} />);
    typeInto(view.byTestId('paste-text'), 'x'.repeat(8193));
    click(view.byTestId('paste-send'));
    await flush();
    expect(view.byTestId('paste-error')?.textContent).toContain('Too many text for paste!');
    expect(requests.some((r) => r.path === '/api/hid/print')).toBe(false);
  });

  it('sends the text with the keymap setting and lists what it could not type', async () => {
    view = await render(<PasteDialog onClose={() => undefined} />);
    typeInto(view.byTestId('paste-text'), 'ab€c');
    click(view.byTestId('paste-send'));
    await flush();
    const req = requests.find((r) => r.path === '/api/hid/print');
    expect(req?.body).toBe('ab€c');
    expect(req?.query.get('keymap')).toBe('fr');
    expect(req?.query.get('limit')).toBe('0');
    const result = view.byTestId('paste-result')?.textContent ?? '';
    expect(result).toContain('4 characters typed');
    expect(view.byTestId('paste-unmapped')?.textContent).toContain('€ U+200B');
  });
});

describe('ShortcutsMenu', () => {
  it('sends a built-in shortcut: keys pressed in order, released in reverse', async () => {
    const events = recordKeys();
    view = await render(
      <NotifyProvider>
        <ShortcutsMenu onAdd={() => undefined} />
      </NotifyProvider>,
    );
    click(view.byTestId('toolbar-shortcuts'));
    await flush();
    click(view.byTestId('shortcut-builtin-0'));
    expect(events).toEqual(CTRL_ALT_DEL);
  });

  it("lists the user's shortcuts, deletes one, and opens the add dialog", async () => {
    const events = recordKeys();
    setConfig({
      shortcuts: [{ keys: ['ControlLeft', 'KeyC'], label: 'Copy' }, { keys: ['MetaLeft', 'KeyL'] }],
    });
    const onAdd = vi.fn();
    view = await render(
      <NotifyProvider>
        <ShortcutsMenu onAdd={onAdd} />
      </NotifyProvider>,
    );
    click(view.byTestId('toolbar-shortcuts'));
    await flush();
    expect(view.byTestId('shortcut-saved-0')?.textContent).toBe('Copy');
    expect(view.byTestId('shortcut-saved-1')?.textContent).toBe('Win+L');
    click(view.byTestId('shortcut-delete-0'));
    await flush();
    expect(events).toEqual([]);
    const write = requests.find((r) => r.path === '/api/system/set_config');
    expect((JSON.parse(write?.body ?? '{}') as UserConfig).shortcuts).toEqual([
      { keys: ['MetaLeft', 'KeyL'] },
    ]);
    click(view.byTestId('shortcut-add'));
    expect(onAdd).toHaveBeenCalledOnce();
  });
});
