import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import {
  applyMsd,
  driveMode,
  freeSpace,
  imageList,
  isoList,
  loadMsd,
  mergeMsdState,
  mountImage,
  onMsdReconnectedForTests,
  resetMsdForTests,
  setMsdEnabled,
  useMsd,
  type MsdState,
} from './msd-store';

function fullState(): MsdState {
  return {
    enabled: true,
    online: true,
    busy: false,
    storage: {
      images: {
        'old.iso': {
          complete: true,
          removable: true,
          writable: false,
          size: 1000,
          mod_ts: 1_700_000_000,
        },
        'new.img': {
          complete: true,
          removable: true,
          writable: true,
          size: 2000,
          mod_ts: 1_700_000_500,
        },
        'notes.txt': {
          complete: true,
          removable: true,
          writable: true,
          size: 10,
          mod_ts: 1_700_000_100,
        },
      },
      parts: { '': { size: 10_000, free: 7_000, writable: true } },
      downloading: null,
      uploading: null,
    },
    drive: { image: null, connected: false, cdrom: true, rw: false },
    drive_partition: { image: null, connected: false, cdrom: false, rw: false },
  };
}

beforeEach(() => resetMsdForTests());
afterEach(() => vi.unstubAllGlobals());

describe('mergeMsdState', () => {
  it('takes the first state whole', () => {
    expect(mergeMsdState(null, fullState())).toEqual(fullState());
  });

  it('deep-merges partial events and leaves the rest alone', () => {
    let state = mergeMsdState(null, fullState());
    state = mergeMsdState(state, {
      storage: { uploading: { name: 'a.iso', size: 10, written: 4 } },
    });
    expect(state?.storage.uploading).toEqual({ name: 'a.iso', size: 10, written: 4 });
    expect(Object.keys(state?.storage.images ?? {})).toHaveLength(3);
    expect(state?.storage.parts['']?.free).toBe(7_000);

    state = mergeMsdState(state, { busy: true, drive: { connected: true } });
    expect(state?.busy).toBe(true);
    expect(state?.drive).toEqual({ image: null, connected: true, cdrom: true, rw: false });
    expect(state?.enabled).toBe(true);

    state = mergeMsdState(state, { storage: { parts: { '': { free: 5_000 } } } });
    expect(state?.storage.parts['']).toEqual({ size: 10_000, free: 5_000, writable: true });

    state = mergeMsdState(state, { storage: { uploading: null } });
    expect(state?.storage.uploading).toBeNull();
  });

  it('replaces the image map, so a deleted image goes away', () => {
    let state = mergeMsdState(null, fullState());
    const { 'old.iso': _gone, ...rest } = fullState().storage.images;
    state = mergeMsdState(state, { storage: { images: rest } });
    expect(Object.keys(state?.storage.images ?? {}).sort()).toEqual(['new.img', 'notes.txt']);
  });

  it('replaces everything on a full state (online flipped)', () => {
    let state = mergeMsdState(null, fullState());
    const offline: MsdState = {
      ...fullState(),
      online: false,
      storage: { images: {}, parts: {}, downloading: null, uploading: null },
    };
    state = mergeMsdState(state, offline);
    expect(state).toEqual(offline);
  });

  it('ignores frames that are not objects', () => {
    const state = mergeMsdState(null, fullState());
    expect(mergeMsdState(state, null)).toBe(state);
    expect(mergeMsdState(state, [1, 2])).toBe(state);
  });

  it('applyMsd feeds the store', () => {
    applyMsd(fullState());
    applyMsd({ drive: { image: { name: 'new.img' }, connected: true } as MsdState['drive'] });
    const state = useMsd.getState().state;
    expect(state?.drive.image?.name).toBe('new.img');
    expect(state?.drive.cdrom).toBe(true);
  });
});

describe('lists', () => {
  it('sorts images newest first and filters the ISO list', () => {
    const images = imageList(fullState());
    expect(images.map((i) => i.name)).toEqual(['new.img', 'notes.txt', 'old.iso']);
    expect(images[0]).toMatchObject({ name: 'new.img', size: 2000, complete: true });
    const withCaps = [
      ...images,
      { ...images[0]!, name: 'CAPS.ISO' },
      { ...images[0]!, name: 'x.BIN' },
    ];
    expect(isoList(withCaps).map((i) => i.name)).toEqual([
      'new.img',
      'old.iso',
      'CAPS.ISO',
      'x.BIN',
    ]);
    expect(imageList(null)).toEqual([]);
  });

  it('reads free space and the drive mode', () => {
    expect(freeSpace(fullState())).toBe(7_000);
    expect(freeSpace(null)).toBeNull();
    expect(driveMode(fullState())).toBe('cdrom');
    expect(driveMode({ ...fullState(), drive: { ...fullState().drive, cdrom: false } })).toBe(
      'flash',
    );
  });
});

describe('calls', () => {
  let requests: RecordedRequest[];

  it('mounts: set_params with image and type, then set_connected', async () => {
    ({ requests } = stubFetch({
      '/api/msd/set_params': () => envelope(200, {}),
      '/api/msd/set_connected': () => envelope(200, {}),
    }));
    await mountImage('new.img', 'flash');
    expect(requests.map((r) => `${r.method} ${r.path}?${r.query.toString()}`)).toEqual([
      'POST /api/msd/set_params?image=new.img&cdrom=0&rw=1',
      'POST /api/msd/set_connected?connected=1',
    ]);
  });

  it('set_enabled marks the restart, and the reconnection re-reads the state', async () => {
    ({ requests } = stubFetch({
      '/api/msd/set_enabled': () => envelope(200, {}),
      '/api/msd': () => envelope(200, { ...fullState(), enabled: false }),
    }));
    applyMsd(fullState());
    await setMsdEnabled(false);
    expect(requests[0]?.query.get('enabled')).toBe('0');
    expect(useMsd.getState().restarting).toBe(true);
    await onMsdReconnectedForTests();
    expect(useMsd.getState().restarting).toBe(false);
    expect(useMsd.getState().state?.enabled).toBe(false);
  });

  it('set_enabled refused by the server throws and does not wait for a restart', async () => {
    stubFetch({
      '/api/msd/set_enabled': () => envelope(409, { error: 'MsdIsBusyError', error_msg: 'busy' }),
    });
    await expect(setMsdEnabled(true)).rejects.toMatchObject({ error: 'MsdIsBusyError' });
    expect(useMsd.getState().restarting).toBe(false);
  });

  it('loadMsd replaces the state with the answer', async () => {
    stubFetch({ '/api/msd': () => envelope(200, fullState()) });
    applyMsd({ busy: true });
    await loadMsd();
    expect(useMsd.getState().state).toEqual(fullState());
  });
});
