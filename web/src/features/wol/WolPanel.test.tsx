import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { click, typeInto } from '../../test/dom';
import { resetWolForTests } from './wol';
import WolPanel from './WolPanel';

const PC = { name: 'Office PC', mac: 'AA:BB:CC:DD:EE:FF' };

let view: Rendered | undefined;
let requests: RecordedRequest[];

async function open() {
  view = await renderPanel(<WolPanel />);
  return view;
}

beforeEach(() => {
  resetWolForTests();
  ({ requests } = stubFetch({
    '/api/wol/devices': () => envelope(200, { devices: [PC] }),
    '/api/wol/add': () =>
      envelope(400, {
        error: 'WolDeviceExistsError',
        error_msg: 'A device with the MAC address 00:11:22:33:44:55 already exists',
      }),
    '/api/wol/wake': () =>
      envelope(500, { error: 'WolSendError', error_msg: 'The wake-up packet could not be sent' }),
    '/api/wol/rename': () => envelope(200, { device: { ...PC, name: 'Desk' } }),
  }));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

describe('WolPanel', () => {
  it('lists the devices with their actions', async () => {
    const v = await open();
    expect(v.byTestId('wol-panel')).not.toBeNull();
    expect(v.byTestId(`wol-row-${PC.mac}`)?.textContent).toContain('Office PC');
    for (const id of ['wol-wake', 'wol-rename', 'wol-remove']) {
      expect(v.byTestId(`${id}-${PC.mac}`), id).not.toBeNull();
    }
  });

  it('checks the form before calling the server', async () => {
    const v = await open();
    typeInto(v.byTestId('wol-add-mac'), 'aa:bb:cc:dd:ee:ff');
    click(v.byTestId('wol-add-submit'));
    await flush();
    const text = document.body.textContent ?? '';
    expect(text).toContain(en.wol.errors.nameRequired);
    expect(text).toContain(en.wol.errors.macDuplicate);
    expect(requests.filter((r) => r.path === '/api/wol/add')).toHaveLength(0);
  });

  it('shows "add device failed" with the server reason', async () => {
    const v = await open();
    typeInto(v.byTestId('wol-add-name'), 'NAS');
    typeInto(v.byTestId('wol-add-mac'), '00-11-22-33-44-55');
    click(v.byTestId('wol-add-submit'));
    await flush();
    const add = requests.find((r) => r.path === '/api/wol/add');
    expect(add?.query.get('mac')).toBe('00:11:22:33:44:55');
    expect(v.byTestId('wol-error')?.textContent).toBe(
      `${en.wol.addFailed}: A device with the MAC address 00:11:22:33:44:55 already exists`,
    );
  });

  it('shows "wake failed"', async () => {
    const v = await open();
    click(v.byTestId(`wol-wake-${PC.mac}`));
    await flush();
    expect(requests.at(-1)?.path).toBe('/api/wol/wake');
    expect(v.byTestId('wol-error')?.textContent).toContain(en.wol.wakeFailed);
  });

  it('refuses a rename to the same name, then renames', async () => {
    const v = await open();
    click(v.byTestId(`wol-rename-${PC.mac}`));
    await flush();
    click(v.byTestId('wol-rename-ok'));
    await flush();
    expect(document.body.textContent).toContain(en.wol.errors.sameName);
    expect(requests.some((r) => r.path === '/api/wol/rename')).toBe(false);
    typeInto(v.byTestId('wol-rename-input'), 'Desk');
    click(v.byTestId('wol-rename-ok'));
    await flush();
    expect(requests.find((r) => r.path === '/api/wol/rename')?.query.get('name')).toBe('Desk');
    expect(v.byTestId(`wol-row-${PC.mac}`)?.textContent).toContain('Desk');
  });
});
