import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { UPLOAD_SPEED_DISPLAY_CAP } from '@kvm/protocol/constants';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { FakeXhr } from '../../test/fake-xhr';
import {
  answerCancelDownload,
  beginDownload,
  checkVersion,
  dismissConfirm,
  dismissTip,
  DOWNLOAD_STALL_MS,
  firmwareUploader,
  getUpgradeState,
  offeredBeta,
  requestConfirm,
  resetUpgradeStore,
  resumeDownload,
  runUpgrade,
  setControlOpen,
  tipVersion,
  TIP_DISMISSED_KEY,
  UPGRADE_FROM_KEY,
  UPGRADE_ID_KEY,
  UPGRADE_SAVE_CONFIG_KEY,
  UPGRADE_TO_KEY,
  uploadFirmware,
} from './upgrade-store';

const COMPARE = {
  local_model: 'RM1',
  local_version: 'V1.2.0 release1',
  server_model: 'RM1',
  server_version: 'V1.3.0 release1',
  release_note: 'notes',
  release_note_cn: '说明',
  error: null,
  beta_error: null,
};

const TOTAL = 4_000_000;
let requests: RecordedRequest[];
let compare: Record<string, unknown>;
let downloaded: number;
let total: number;
let startAnswer: () => Response;

const count = (path: string) => requests.filter((r) => r.path === path).length;

/** Lets timers and the fetch promises they start run, in fake time. */
async function advance(ms: number) {
  await vi.advanceTimersByTimeAsync(ms);
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
  localStorage.clear();
  sessionStorage.clear();
  resetUpgradeStore();
  compare = { ...COMPARE };
  downloaded = 0;
  total = 0;
  startAnswer = () => envelope(200, { status: 'Upgrade started', stdout: '', stderr: '' });
  ({ requests } = stubFetch({
    '/api/upgrade/compare': () => envelope(200, compare),
    '/api/upgrade/version': () => envelope(200, { version: 'V1.2.0 release1', model: 'RM1' }),
    '/api/upgrade/download': () => {
      total = TOTAL;
      return envelope(200, { size: TOTAL });
    },
    '/api/upgrade/beta/download': () => {
      total = TOTAL;
      return envelope(200, { size: TOTAL });
    },
    '/api/upgrade/download_info': () => envelope(200, { size: downloaded, total_size: total }),
    '/api/upgrade/download_cancel': () => {
      total = 0;
      return envelope(200, { status: 'success', message: 'cancelled' });
    },
    '/api/upgrade/start': () => startAnswer(),
  }));
});

afterEach(() => {
  resetUpgradeStore();
  firmwareUploader.cancel();
  firmwareUploader.clear();
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('version check and the new-version tip (SPEC 4 step 1)', () => {
  it('shows the tip when the server version is newer, remembered per server version', async () => {
    await checkVersion();
    expect(tipVersion(getUpgradeState())).toBe('V1.3.0 release1');

    dismissTip();
    expect(tipVersion(getUpgradeState())).toBeNull();
    expect(localStorage.getItem(TIP_DISMISSED_KEY)).toBe('V1.3.0 release1');

    // A reload: the dismissed version stays hidden.
    resetUpgradeStore();
    await checkVersion();
    expect(tipVersion(getUpgradeState())).toBeNull();

    // A newer release appears: its tip shows.
    compare = { ...COMPARE, server_version: 'V1.4.0 release1' };
    await checkVersion();
    expect(tipVersion(getUpgradeState())).toBe('V1.4.0 release1');
  });

  it('shows no tip when up to date, older, or when the lookup failed', async () => {
    compare = { ...COMPARE, server_version: 'V1.2.0 release1' };
    await checkVersion();
    expect(tipVersion(getUpgradeState())).toBeNull();
    compare = { ...COMPARE, server_version: 'V1.1.0' };
    await checkVersion();
    expect(tipVersion(getUpgradeState())).toBeNull();
    compare = { local_version: 'V1.2.0 release1', error: 'Failed to fetch the version list' };
    await checkVersion();
    expect(tipVersion(getUpgradeState())).toBeNull();
  });
});

describe('online download (SPEC 4 step 2)', () => {
  it('polls download_info every second until size reaches total_size, then asks to confirm', async () => {
    await checkVersion();
    await beginDownload();
    expect(count('/api/upgrade/download')).toBe(1);
    expect(getUpgradeState().download).toMatchObject({ status: 'downloading', total: TOTAL });

    downloaded = 1_000_000;
    await advance(999);
    expect(count('/api/upgrade/download_info')).toBe(0);
    await advance(1);
    expect(count('/api/upgrade/download_info')).toBe(1);
    expect(getUpgradeState().download.size).toBe(1_000_000);

    downloaded = 3_000_000;
    await advance(1_000);
    expect(count('/api/upgrade/download_info')).toBe(2);
    expect(getUpgradeState().download.size).toBe(3_000_000);
    expect(getUpgradeState().confirm).toBeNull();

    downloaded = TOTAL;
    await advance(1_000);
    expect(getUpgradeState().download.status).toBe('downloaded');
    expect(getUpgradeState().confirm).toBe('download');

    // Polling stopped.
    await advance(5_000);
    expect(count('/api/upgrade/download_info')).toBe(3);
  });

  it('keeps polling after the control closes; no confirm pops up while the control is open', async () => {
    setControlOpen(true);
    await beginDownload();
    setControlOpen(false);
    downloaded = 2_000_000;
    await advance(2_000);
    expect(count('/api/upgrade/download_info')).toBe(2);
    expect(getUpgradeState().download.size).toBe(2_000_000);

    setControlOpen(true);
    downloaded = TOTAL;
    await advance(1_000);
    expect(getUpgradeState().download.status).toBe('downloaded');
    expect(getUpgradeState().confirm).toBeNull();
  });

  it('downloads the beta from beta/download and remembers which version it is', async () => {
    compare = { ...COMPARE, beta_version: 'V1.4.0 beta2', beta_error: null };
    await checkVersion();
    expect(offeredBeta(getUpgradeState().compare)).toBe('V1.4.0 beta2');
    await beginDownload(true);
    expect(count('/api/upgrade/beta/download')).toBe(1);
    expect(getUpgradeState().downloadVersion).toBe('V1.4.0 beta2');
    compare = { ...COMPARE, beta_version: 'V1.1.0 beta1', beta_error: null };
    await checkVersion();
    expect(offeredBeta(getUpgradeState().compare)).toBeNull();
  });

  it('stops polling a download that does not move (issue 21: polled for as long as the page was open)', async () => {
    // The device answers the size of a package that is gone: 0 of 4 MB, forever.
    total = TOTAL;
    downloaded = 0;
    await resumeDownload();
    expect(getUpgradeState().download.status).toBe('downloading');
    await advance(DOWNLOAD_STALL_MS + 2_000);
    expect(getUpgradeState().download).toMatchObject({ status: 'none', failed: true });
    const asked = count('/api/upgrade/download_info');
    await advance(60_000);
    expect(count('/api/upgrade/download_info')).toBe(asked);
  });

  it('a download that grows slowly is followed to its end', async () => {
    await beginDownload();
    for (let i = 1; i <= 8; i++) {
      downloaded = (TOTAL / 8) * i;
      await advance(DOWNLOAD_STALL_MS - 5_000);
      expect(getUpgradeState().download.status).toBe(i < 8 ? 'downloading' : 'downloaded');
    }
  });

  it('nothing is polled when the device has no download (zeros)', async () => {
    await resumeDownload();
    await advance(10_000);
    expect(count('/api/upgrade/download_info')).toBe(1);
    expect(getUpgradeState().download.status).toBe('none');
  });

  it('stops when the device drops the download (total_size 0)', async () => {
    await beginDownload();
    total = 0;
    await advance(1_000);
    expect(getUpgradeState().download).toMatchObject({ status: 'none', failed: true });
  });
});

describe('confirm dialog (SPEC 4 step 3)', () => {
  it('cancelling a download confirm asks whether to cancel the download; yes cancels it', async () => {
    await beginDownload();
    downloaded = TOTAL;
    await advance(1_000);
    dismissConfirm();
    expect(getUpgradeState()).toMatchObject({ confirm: null, askCancelDownload: true });

    await answerCancelDownload(true);
    expect(count('/api/upgrade/download_cancel')).toBe(1);
    expect(getUpgradeState().download.status).toBe('none');
    expect(getUpgradeState().askCancelDownload).toBe(false);
  });

  it('no keeps the download; an upload confirm asks nothing', async () => {
    requestConfirm('download');
    dismissConfirm();
    await answerCancelDownload(false);
    expect(count('/api/upgrade/download_cancel')).toBe(0);

    requestConfirm('upload');
    dismissConfirm();
    expect(getUpgradeState().askCancelDownload).toBe(false);
  });

  it('start carries save_config and remembers the version before it', async () => {
    await checkVersion();
    expect(await runUpgrade(true)).toEqual({ kind: 'started' });
    expect(requests.at(-1)?.method).toBe('POST');
    expect(requests.at(-1)?.query.get('save_config')).toBe('1');
    expect(sessionStorage.getItem(UPGRADE_FROM_KEY)).toBe('V1.2.0 release1');

    await runUpgrade(false);
    expect(requests.at(-1)?.query.get('save_config')).toBe('0');
    expect(sessionStorage.getItem(UPGRADE_SAVE_CONFIG_KEY)).toBe('0');
  });

  it("keeps the started upgrade's id and version for /upgrading; a later start drops them", async () => {
    startAnswer = () =>
      envelope(200, {
        status: 'Upgrade started',
        id: 'up-42',
        version: 'V1.3.0 release1',
        stdout: '',
        stderr: '',
      });
    await checkVersion();
    expect(await runUpgrade(true)).toEqual({ kind: 'started' });
    expect(sessionStorage.getItem(UPGRADE_ID_KEY)).toBe('up-42');
    expect(sessionStorage.getItem(UPGRADE_TO_KEY)).toBe('V1.3.0 release1');
    expect(sessionStorage.getItem(UPGRADE_FROM_KEY)).toBe('V1.2.0 release1');

    // A start without an id (or a refused one) must not leave the old id to be matched.
    startAnswer = () => envelope(200, { status: 'Upgrade started', stdout: '', stderr: '' });
    await runUpgrade(true);
    expect(sessionStorage.getItem(UPGRADE_ID_KEY)).toBeNull();
    expect(sessionStorage.getItem(UPGRADE_TO_KEY)).toBeNull();
  });

  it('asks the device its version when no check ran yet', async () => {
    await runUpgrade(true);
    expect(count('/api/upgrade/version')).toBe(1);
    expect(sessionStorage.getItem(UPGRADE_FROM_KEY)).toBe('V1.2.0 release1');
  });

  it('reports a failed check (200 with Upgrade failed) and errors as failures', async () => {
    startAnswer = () =>
      envelope(200, {
        status: 'Upgrade failed',
        signature_valid: false,
        firmware_valid: true,
        message: 'Signature verification failed',
      });
    expect(await runUpgrade(true)).toEqual({
      kind: 'failed',
      check: 'signature',
      message: 'Signature verification failed',
    });
    startAnswer = () =>
      envelope(200, { status: 'Upgrade failed', signature_valid: true, firmware_valid: false });
    expect(await runUpgrade(true)).toEqual({ kind: 'failed', check: 'firmware', message: '' });
    // Our device stops at a bad signature, its files unchecked: the signature is what failed.
    startAnswer = () =>
      envelope(200, { status: 'Upgrade failed', signature_valid: false, firmware_valid: false });
    expect(await runUpgrade(true)).toMatchObject({ kind: 'failed', check: 'signature' });
    startAnswer = () => envelope(200, { status: 'Upgrade failed', message: 'no package' });
    expect(await runUpgrade(true)).toEqual({ kind: 'failed', check: null, message: 'no package' });
    startAnswer = () => envelope(404, { error: 'NotFoundError', error_msg: 'Not found' });
    expect(await runUpgrade(true)).toEqual({ kind: 'failed', check: null, message: 'Not found' });
    expect(sessionStorage.getItem(UPGRADE_ID_KEY)).toBeNull();
    // An older release: the versions for the downgrade question, kept with save_config.
    startAnswer = () =>
      envelope(409, {
        error: 'UpgradeDowngradeError',
        error_msg: 'older',
        package_version: 'V1.1.0',
        local_version: 'V1.2.0 release1',
      });
    expect(await runUpgrade(false)).toEqual({
      kind: 'downgrade',
      packageVersion: 'V1.1.0',
      localVersion: 'V1.2.0 release1',
    });
    expect(getUpgradeState().downgrade).toEqual({
      packageVersion: 'V1.1.0',
      localVersion: 'V1.2.0 release1',
      saveConfig: false,
    });
    startAnswer = () => envelope(200, { status: 'Upgrade started', id: 'x' });
    expect(await runUpgrade(false, { allowDowngrade: true })).toEqual({ kind: 'started' });
    expect(requests.at(-1)?.query.get('allow_downgrade')).toBe('1');
    expect(getUpgradeState().downgrade).toBeNull();
  });
});

describe('package upload', () => {
  it('sends the multipart field file with progress, no timeout, capped speed, then the confirm', async () => {
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    const file = new File([new Uint8Array(1024)], 'kvm-1.3.0.pkg');
    const done = uploadFirmware(file);
    const xhr = FakeXhr.last;
    if (!xhr) throw new Error('no upload');
    expect(xhr.url).toBe('/api/upgrade/upload');
    expect(xhr.timeout).toBe(0);
    expect(xhr.body).toBeInstanceOf(FormData);
    expect((xhr.body as FormData).get('file')).toBeInstanceOf(File);

    // The browser's first events claim absurd speeds: shown capped.
    await advance(10);
    xhr.progress(512, 1024);
    expect(firmwareUploader.getSnapshot()).toMatchObject({ phase: 'running', percent: 50 });
    expect(firmwareUploader.getSnapshot().speed).toBeLessThanOrEqual(UPLOAD_SPEED_DISPLAY_CAP);

    xhr.answer(200, { ok: true, result: { filename: 'kvm-1.3.0.pkg', size: 1024 } });
    await done;
    expect(getUpgradeState().confirm).toBe('upload');
  });

  it('a failed upload shows no confirm', async () => {
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    const done = uploadFirmware(new File(['x'], 'p.pkg'));
    FakeXhr.last?.answer(413, { ok: false, result: { error: 'str', error_msg: 'no space' } });
    await expect(done).rejects.toThrow();
    expect(getUpgradeState().confirm).toBeNull();
  });
});
