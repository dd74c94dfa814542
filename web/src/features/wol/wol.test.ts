import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WOL_DEVICES_MAX, WOL_NAME_MAX } from '@kvm/protocol/wol';
import { envelope, stubFetch } from '../../test/fetch-stub';
import {
  addWolDevice,
  checkNewDevice,
  checkRename,
  checkWolMac,
  checkWolName,
  normalizeMacInput,
  removeWolDevice,
  renameWolDevice,
  resetWolForTests,
  useWol,
  wakeWolDevice,
} from './wol';

const PC = { name: 'Office PC', mac: 'AA:BB:CC:DD:EE:FF' };

beforeEach(() => resetWolForTests());
afterEach(() => vi.unstubAllGlobals());

describe('MAC addresses', () => {
  it('normalises to upper case with colons', () => {
    expect(normalizeMacInput('aa:bb:cc:dd:ee:ff')).toBe('AA:BB:CC:DD:EE:FF');
    expect(normalizeMacInput(' 01:23:45:67:89:ab ')).toBe('01:23:45:67:89:AB');
    expect(normalizeMacInput('01-23-45-67-89-AB')).toBe('01:23:45:67:89:AB');
    expect(normalizeMacInput('0123456789ab')).toBe('01:23:45:67:89:AB');
  });

  it('refuses anything but six pairs of hex digits', () => {
    for (const bad of [
      '',
      'AA:BB:CC:DD:EE',
      'AA:BB:CC:DD:EE:FF:00',
      'AA:BB:CC:DD:EE:FG',
      'A:BB:CC:DD:EE:FF0',
      'AA:BB-CC:DD:EE:FF',
      'AABB.CCDD.EEFF',
      'AA BB CC DD EE FF',
    ]) {
      expect(normalizeMacInput(bad), bad).toBeNull();
    }
  });

  it('checks presence, format and uniqueness', () => {
    expect(checkWolMac('  ', [PC])).toBe('macRequired');
    expect(checkWolMac('nope', [PC])).toBe('macInvalid');
    expect(checkWolMac('aa:bb:cc:dd:ee:ff', [PC])).toBe('macDuplicate');
    expect(checkWolMac('aa-bb-cc-dd-ee-fe', [PC])).toBeNull();
  });
});

describe('names', () => {
  it('are required and limited', () => {
    expect(checkWolName('')).toBe('nameRequired');
    expect(checkWolName('   ')).toBe('nameRequired');
    expect(checkWolName('x'.repeat(WOL_NAME_MAX + 1))).toBe('nameTooLong');
    expect(checkWolName(' NAS ')).toBeNull();
  });

  it('a new name must differ from the old one', () => {
    expect(checkRename('NAS', 'NAS')).toBe('sameName');
    expect(checkRename('NAS', ' NAS ')).toBe('sameName');
    expect(checkRename('NAS', '')).toBe('nameRequired');
    expect(checkRename('NAS', 'Backup NAS')).toBeNull();
  });

  it('the add form reports both fields at once, then the list limit', () => {
    expect(checkNewDevice('', 'x', [])).toEqual({ name: 'nameRequired', mac: 'macInvalid' });
    expect(checkNewDevice('PC', '00:11:22:33:44:55', [])).toEqual({});
    const full = Array.from({ length: WOL_DEVICES_MAX }, (_, i) => ({
      name: `pc${i}`,
      mac: `00:00:00:00:${String(Math.floor(i / 100)).padStart(2, '0')}:${String(i % 100).padStart(2, '0')}`,
    }));
    expect(checkNewDevice('PC', '11:11:11:11:11:11', full)).toEqual({ name: 'tooMany' });
  });
});

describe('calls', () => {
  it('add sends the normalised MAC and the trimmed name, and keeps the list', async () => {
    const { requests } = stubFetch({
      '/api/wol/add': (req) =>
        envelope(200, {
          device: { name: req.query.get('name'), mac: req.query.get('mac') },
        }),
    });
    await addWolDevice(' Office PC ', 'aa-bb-cc-dd-ee-ff');
    expect(requests[0]?.method).toBe('POST');
    expect(requests[0]?.query.get('name')).toBe('Office PC');
    expect(requests[0]?.query.get('mac')).toBe('AA:BB:CC:DD:EE:FF');
    expect(useWol.getState().devices).toEqual([PC]);
  });

  it('rename, wake and remove', async () => {
    useWol.setState({ devices: [PC], status: 'ready' });
    const { requests } = stubFetch({
      '/api/wol/rename': () => envelope(200, { device: { ...PC, name: 'Desk' } }),
      '/api/wol/wake': () =>
        envelope(200, { sent: { mac: PC.mac, address: '255.255.255.255', port: 9 } }),
      '/api/wol/remove': () => envelope(200, {}),
    });
    await renameWolDevice(PC.mac, ' Desk ');
    expect(useWol.getState().devices[0]?.name).toBe('Desk');
    await expect(wakeWolDevice(PC.mac)).resolves.toMatchObject({ port: 9 });
    await removeWolDevice(PC.mac);
    expect(useWol.getState().devices).toEqual([]);
    expect(requests.map((r) => `${r.path}?${r.query.toString()}`)).toEqual([
      '/api/wol/rename?mac=AA%3ABB%3ACC%3ADD%3AEE%3AFF&name=Desk',
      '/api/wol/wake?mac=AA%3ABB%3ACC%3ADD%3AEE%3AFF',
      '/api/wol/remove?mac=AA%3ABB%3ACC%3ADD%3AEE%3AFF',
    ]);
  });
});
