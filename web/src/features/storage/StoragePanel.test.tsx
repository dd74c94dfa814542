import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest, type Responder } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { click, typeInto } from '../../test/dom';
import { FakeXhr } from '../../test/fake-xhr';
import { resetMsdForTests, useMsd, type MsdState } from './msd-store';
import StoragePanel from './StoragePanel';
import { msdUploader } from './upload';

function msdState(patch: Partial<MsdState> = {}): MsdState {
  return {
    enabled: true,
    online: true,
    busy: false,
    storage: {
      images: {
        'debian.iso': {
          complete: true,
          removable: true,
          writable: false,
          size: 4_194_304,
          mod_ts: 1_700_000_000,
        },
        'half.img': {
          complete: false,
          removable: true,
          writable: true,
          size: 1024,
          mod_ts: 1_700_000_900,
        },
        'notes.txt': {
          complete: true,
          removable: true,
          writable: true,
          size: 10,
          mod_ts: 1_700_000_500,
        },
      },
      parts: { '': { size: 100_000_000, free: 50_000_000, writable: true } },
      downloading: null,
      uploading: null,
    },
    drive: { image: null, connected: false, cdrom: true, rw: false },
    drive_partition: { image: null, connected: false, cdrom: false, rw: false },
    ...patch,
  };
}

function pickFile(view: Rendered, file: File) {
  const input = view.byTestId('msd-upload-input');
  if (!(input instanceof HTMLInputElement)) throw new Error('no file input');
  Object.defineProperty(input, 'files', { value: [file], configurable: true });
  act(() => {
    input.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

function calls(requests: RecordedRequest[]): string[] {
  return requests
    .filter((r) => r.path !== '/api/msd')
    .map((r) => `${r.method} ${r.path}${r.query.size ? `?${r.query.toString()}` : ''}`);
}

let view: Rendered | undefined;
let requests: RecordedRequest[];
let state: MsdState;

async function open(routes: Record<string, Responder> = {}) {
  ({ requests } = stubFetch({ '/api/msd': () => envelope(200, state), ...routes }));
  view = await renderPanel(<StoragePanel />);
  return view;
}

beforeEach(() => {
  localStorage.clear();
  resetMsdForTests();
  msdUploader.clear();
  state = msdState();
  FakeXhr.last = null;
});

afterEach(() => {
  msdUploader.cancel();
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

describe('StoragePanel', () => {
  it('shows the ISO list newest first in image mounting mode, every file in file sharing', async () => {
    const v = await open();
    expect(v.byTestId('storage-panel')).not.toBeNull();
    expect(v.byTestId('msd-mode')?.dataset['value']).toBe('cdrom');
    const rows = () =>
      [...document.querySelectorAll<HTMLElement>('[data-testid^="msd-image-"]')].map(
        (el) => `${el.dataset['testid']}:${el.dataset['complete']}`,
      );
    expect(rows()).toEqual(['msd-image-half.img:false', 'msd-image-debian.iso:true']);
    expect(v.byTestId('msd-mount-debian.iso')).not.toBeNull();
    expect(v.byTestId('msd-mount-half.img')?.hasAttribute('disabled')).toBe(true);

    const flash = v.byTestId('msd-mode-flash');
    click(flash?.tagName === 'INPUT' ? flash : (flash?.querySelector('input') ?? null));
    await flush();
    expect(v.byTestId('msd-mode')?.dataset['value']).toBe('flash');
    expect(rows()).toEqual([
      'msd-image-half.img:false',
      'msd-image-notes.txt:true',
      'msd-image-debian.iso:true',
    ]);
  });

  it('mounts as CD-ROM and shows the one-time tip; a second mount shows no tip', async () => {
    const v = await open({
      '/api/msd/set_params': () => envelope(200, {}),
      '/api/msd/set_connected': () => envelope(200, {}),
    });
    click(v.byTestId('msd-mount-debian.iso'));
    await flush();
    expect(calls(requests)).toEqual([
      'POST /api/msd/set_params?image=debian.iso&cdrom=1',
      'POST /api/msd/set_connected?connected=1',
    ]);
    expect(v.byTestId('msd-mounted-tip')).not.toBeNull();
    expect(localStorage.getItem(STORAGE_KEYS.msdMountedTip)).toBe('1');

    v.unmount();
    view = undefined;
    document.body.innerHTML = '';
    const again = await open({
      '/api/msd/set_params': () => envelope(200, {}),
      '/api/msd/set_connected': () => envelope(200, {}),
    });
    click(again.byTestId('msd-mount-debian.iso'));
    await flush();
    expect(again.byTestId('msd-mounted-tip')).toBeNull();
  });

  it('shows the mount failure of SPEC 8', async () => {
    const v = await open({
      '/api/msd/set_params': () => envelope(200, {}),
      '/api/msd/set_connected': () => envelope(500, {}),
    });
    click(v.byTestId('msd-mount-debian.iso'));
    await flush();
    expect(v.byTestId('msd-error')?.textContent).toBe(
      'Ensure your file can be mounted as an iso format',
    );
    expect(v.byTestId('msd-mounted-tip')).toBeNull();
  });

  it('shows the mounted drive with unmount, and locks the mode', async () => {
    state = msdState({
      drive: {
        image: {
          name: 'debian.iso',
          in_storage: true,
          complete: true,
          removable: true,
          writable: false,
          size: 4_194_304,
          mod_ts: 1_700_000_000,
        },
        connected: true,
        cdrom: true,
        rw: false,
      },
    });
    const v = await open({ '/api/msd/set_connected': () => envelope(200, {}) });
    expect(v.byTestId('msd-mount-debian.iso')).toBeNull();
    expect(v.byTestId('msd-remove-debian.iso')?.hasAttribute('disabled')).toBe(true);
    click(v.byTestId('msd-unmount'));
    await flush();
    expect(calls(requests)).toEqual(['POST /api/msd/set_connected?connected=0']);
  });

  it('refuses wrong types, duplicates and files larger than the free space before uploading', async () => {
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    const v = await open();
    pickFile(v, new File(['x'], 'setup.exe'));
    await flush();
    expect(v.byTestId('msd-error')?.textContent).toBe(en.storage.upload.wrongType);
    pickFile(v, new File(['x'], 'debian.iso'));
    await flush();
    expect(v.byTestId('msd-error')?.textContent).toBe('This image already exists!');
    const big = new File(['x'], 'big.iso');
    Object.defineProperty(big, 'size', { value: 60_000_000 });
    pickFile(v, big);
    await flush();
    expect(v.byTestId('msd-error')?.textContent).toBe(en.storage.upload.noSpace);
    expect(FakeXhr.last).toBeNull();
  });

  it('uploads with progress and cancels', async () => {
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    const v = await open();
    const image = new File([new Uint8Array(1000)], 'new.iso');
    pickFile(v, image);
    await flush();
    const xhr = FakeXhr.last;
    expect(xhr?.url).toBe('/api/msd/write?image=new.iso&prefix=&remove_incomplete=1');
    expect(xhr?.body).toBe(image);
    act(() => {
      xhr?.upload.onprogress?.(
        new ProgressEvent('progress', { loaded: 400, total: 1000, lengthComputable: true }),
      );
    });
    const progress = v.byTestId('msd-upload-progress');
    expect(progress?.dataset['phase']).toBe('running');
    expect(progress?.dataset['percent']).toBe('40');
    expect(progress?.textContent).toContain('40%');
    click(v.byTestId('msd-upload-cancel'));
    await flush();
    expect(xhr?.aborted).toBe(true);
    expect(v.byTestId('msd-upload-progress')?.dataset['phase']).toBe('cancelled');
  });

  it('says "Invalid URL" without calling the server', async () => {
    const v = await open();
    typeInto(v.byTestId('msd-url'), 'ftp://example.com/a.iso');
    click(v.byTestId('msd-url-download'));
    await flush();
    expect(v.byTestId('msd-error')?.textContent).toBe('Invalid URL');
    expect(calls(requests)).toEqual([]);
  });

  it('turns virtual media off after the confirmation and waits for the restart', async () => {
    const v = await open({ '/api/msd/set_enabled': () => envelope(200, {}) });
    click(v.byTestId('msd-enabled'));
    await flush();
    expect(calls(requests)).toEqual([]);
    click(document.querySelector<HTMLElement>('[data-testid="confirm-ok"]'));
    await flush();
    expect(calls(requests)).toEqual(['POST /api/msd/set_enabled?enabled=0']);
    expect(useMsd.getState().restarting).toBe(true);
    expect(v.byTestId('msd-restarting')?.textContent).toBe(en.storage.restarting);
    expect(v.byTestId('storage-panel')?.dataset['state']).toBe('restarting');
  });

  it('formats the partition after the confirmation; a failure says "format failed"', async () => {
    const v = await open({
      '/api/msd/partition_format': () => envelope(500, { error: 'X', error_msg: 'mkfs failed' }),
      '/api/msd/partition_connect': () => envelope(200, {}),
    });
    click(v.byTestId('msd-partition-format'));
    await flush();
    click(document.querySelector<HTMLElement>('[data-testid="confirm-ok"]'));
    await flush();
    expect(calls(requests)).toEqual(['GET /api/msd/partition_format']);
    expect(v.byTestId('msd-error')?.textContent).toBe(
      `${en.storage.partition.formatFailed}: mkfs failed`,
    );
    click(v.byTestId('msd-partition-connect'));
    await flush();
    expect(calls(requests).at(-1)).toBe('GET /api/msd/partition_connect');
  });

  it('shows "turned off" when virtual media is disabled', async () => {
    state = msdState({ enabled: false, online: false });
    const v = await open();
    expect(v.byTestId('storage-panel')?.dataset['state']).toBe('off');
    expect(v.byTestId('msd-mode')).toBeNull();
    expect(document.body.textContent).toContain(en.storage.disabled);
  });
});
