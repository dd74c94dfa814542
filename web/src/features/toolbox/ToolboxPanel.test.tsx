import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UserConfig } from '@kvm/protocol/settings';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { click, pressAsync, typeInto } from '../../test/dom';
import { CTRL_ALT_DEL, recordKeys } from '../../test/keys';
import { resetConfigForTests } from '../config/config-store';
import { virtualKeyInput } from '../keyboard/keyboard-session';
import { resetWolForTests } from '../wol/wol';
import ToolboxPanel from './ToolboxPanel';
import { echoSetConfig, setConfig } from '../../test/config';

const PC = { name: 'Office PC', mac: 'AA:BB:CC:DD:EE:FF' };

let view: Rendered | undefined;
let requests: RecordedRequest[];

beforeEach(() => {
  localStorage.clear();
  resetConfigForTests();
  resetWolForTests();
  setConfig({ keymap: 'de' });
  ({ requests } = stubFetch({
    '/api/hid/print': () => envelope(200, { typed: 3, unmapped: [] }),
    '/api/system/set_config': echoSetConfig,
    '/api/wol/devices': () => envelope(200, { devices: [PC] }),
    '/api/wol/wake': () => envelope(200, {}),
  }));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  virtualKeyInput.releaseAll();
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

async function open() {
  view = await renderPanel(<ToolboxPanel />);
  return view;
}

describe('ToolboxPanel', () => {
  it('has the four GL groups, each folding from a real button', async () => {
    const v = await open();
    for (const id of [
      'toolbox-clipboard',
      'toolbox-shortcuts',
      'toolbox-wol',
      'toolbox-terminal',
    ]) {
      const group = v.byTestId(id);
      expect(group?.dataset['open'], id).toBe('true');
      const toggle = v.byTestId(`${id}-toggle`);
      // A native button: Tab reaches it, Enter and Space press it.
      expect(toggle?.tagName).toBe('BUTTON');
      expect(toggle?.getAttribute('aria-expanded')).toBe('true');
      const body = document.getElementById(toggle?.getAttribute('aria-controls') ?? '');
      expect(body?.hidden).toBe(false);
      click(toggle);
      expect(toggle?.getAttribute('aria-expanded')).toBe('false');
      expect(body?.hidden).toBe(true);
      click(toggle);
      expect(body?.hidden).toBe(false);
    }
  });

  it('clipboard: the paste form of the toolbar, sending to POST /api/hid/print', async () => {
    const v = await open();
    typeInto(v.byTestId('toolbox-paste-text'), 'x'.repeat(8193));
    click(v.byTestId('toolbox-paste-send'));
    await flush();
    expect(v.byTestId('toolbox-paste-error')?.textContent).toContain(en.paste.tooLong);
    expect(requests.some((r) => r.path === '/api/hid/print')).toBe(false);

    typeInto(v.byTestId('toolbox-paste-text'), 'abc');
    expect(v.byTestId('toolbox-paste-error')).toBeNull();
    click(v.byTestId('toolbox-paste-send'));
    await flush();
    const req = requests.find((r) => r.path === '/api/hid/print');
    expect(req?.method).toBe('POST');
    expect(req?.body).toBe('abc');
    expect(req?.query.get('keymap')).toBe('de');
    expect(req?.query.get('limit')).toBe('0');
    expect(v.byTestId('toolbox-paste-result')?.textContent).toContain('3 characters typed');
  });

  it('shortcuts: one click sends a built-in or a saved one; a saved one can be deleted', async () => {
    const events = recordKeys();
    setConfig({ shortcuts: [{ keys: ['MetaLeft', 'KeyL'], label: 'Lock' }] });
    const v = await open();
    expect(v.byTestId('toolbox-shortcut-builtin-0')?.textContent).toBe('Ctrl+Alt+Del');
    click(v.byTestId('toolbox-shortcut-builtin-0'));
    expect(events).toEqual(CTRL_ALT_DEL);
    events.length = 0;
    expect(v.byTestId('toolbox-shortcut-saved-0')?.textContent).toBe('Lock');
    click(v.byTestId('toolbox-shortcut-saved-0'));
    expect(events).toEqual(['MetaLeft:down', 'KeyL:down', 'KeyL:up', 'MetaLeft:up']);

    click(v.byTestId('toolbox-shortcut-delete-0'));
    await flush();
    const write = requests.find((r) => r.path === '/api/system/set_config');
    expect((JSON.parse(write?.body ?? '{}') as UserConfig).shortcuts).toEqual([]);
    expect(v.byTestId('toolbox-shortcuts-none')?.textContent).toBe(en.shortcuts.none);
  });

  it('wake-on-LAN: the WolPanel with its list and its wake call', async () => {
    const v = await open();
    expect(v.byTestId('toolbox-wol')?.querySelector('[data-testid="wol-panel"]')).not.toBeNull();
    expect(v.byTestId(`wol-row-${PC.mac}`)?.textContent).toContain(PC.name);
    await pressAsync(v.byTestId(`wol-wake-${PC.mac}`));
    await flush();
    const wake = requests.find((r) => r.path === '/api/wol/wake');
    expect(wake?.method).toBe('POST');
    expect(wake?.query.get('mac')).toBe(PC.mac);
  });

  it("terminal: opens /webterm as the toolbar does, or on the serial console's tab", async () => {
    const opened = vi.spyOn(window, 'open').mockImplementation(() => null);
    const v = await open();
    click(v.byTestId('toolbox-terminal-device'));
    click(v.byTestId('toolbox-terminal-serial'));
    expect(opened.mock.calls).toEqual([
      [new URL('/webterm', window.location.href).href, '_blank', 'noopener'],
      [new URL('/webterm?tab=serial', window.location.href).href, '_blank', 'noopener'],
    ]);
  });
});
