import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { MemoryRouter, Route, Routes } from 'react-router';
import { NotifyProvider } from '../../components/notify';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, render, type Rendered } from '../../test/render';
import UpgradeControl from './UpgradeControl';
import UpgradeHost from './UpgradeHost';
import {
  getUpgradeState,
  OUTCOME_SEEN_KEY,
  requestConfirm,
  resetUpgradeStore,
  TIP_DISMISSED_KEY,
} from './upgrade-store';

const COMPARE = {
  local_version: 'V1.2.0 release1',
  server_version: 'V1.3.0 release1',
  release_note: 'Faster video',
  release_note_cn: '视频更快',
  error: null,
};

let view: Rendered | undefined;
let requests: RecordedRequest[];
let startAnswer: () => Response;
/** The device's /upgrade/status; null: a device without the route (404). */
let status: Record<string, unknown> | null;
let downloaded: number;
let total: number;

const count = (path: string) => requests.filter((r) => r.path === path).length;

async function until(check: () => unknown, timeout = 8_000) {
  await vi.waitFor(
    async () => {
      await flush(1);
      if (!check()) throw new Error('not yet');
    },
    { timeout, interval: 20 },
  );
}

async function click(el: Element | null | undefined) {
  if (!(el instanceof HTMLElement)) throw new Error('no element');
  await act(async () => el.click());
  await flush();
}

/** The OK or cancel button of the open dialog that holds this test id. */
function dialogButton(testId: string, which: 'confirm-ok' | 'confirm-cancel') {
  const body = document.querySelector(`[data-testid="${testId}"]`);
  return body?.closest('.ant-modal')?.querySelector(`[data-testid="${which}"]`);
}

function saveConfigBox(): HTMLInputElement | null {
  const el = view?.byTestId('upgrade-save-config');
  return el instanceof HTMLInputElement ? el : (el?.querySelector('input') ?? null);
}

async function mount(withControl = false) {
  view = await render(
    <NotifyProvider>
      <MemoryRouter initialEntries={['/']}>
        <Routes>
          <Route
            path="/"
            element={
              <>
                <UpgradeHost />
                {withControl && <UpgradeControl />}
              </>
            }
          />
          <Route path="/upgrading" element={<div data-testid="at-upgrading" />} />
        </Routes>
      </MemoryRouter>
    </NotifyProvider>,
  );
  await until(() => getUpgradeState().compare);
}

beforeEach(() => {
  localStorage.clear();
  sessionStorage.clear();
  resetUpgradeStore();
  downloaded = 0;
  total = 0;
  startAnswer = () => envelope(200, { status: 'Upgrade started', stdout: '', stderr: '' });
  status = null;
  ({ requests } = stubFetch({
    '/api/upgrade/status': () =>
      status ? envelope(200, status) : envelope(404, { error: 'NotFoundError', error_msg: '' }),
    '/api/upgrade/compare': () => envelope(200, COMPARE),
    '/api/upgrade/download': () => {
      total = 1000;
      return envelope(200, { size: 1000 });
    },
    '/api/upgrade/download_info': () => envelope(200, { size: downloaded, total_size: total }),
    '/api/upgrade/download_cancel': () => envelope(200, { status: 'success', message: '' }),
    '/api/upgrade/start': () => startAnswer(),
  }));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  resetUpgradeStore();
  vi.unstubAllGlobals();
  localStorage.clear();
  document.body.innerHTML = '';
});

describe('UpgradeHost (SPEC 4)', () => {
  it('checks the version on load and shows the tip until that version is dismissed', async () => {
    await mount();
    expect(count('/api/upgrade/compare')).toBe(1);
    expect(count('/api/upgrade/download_info')).toBe(1);
    const tip = view?.byTestId('upgrade-tip');
    expect(tip?.textContent).toContain('V1.3.0 release1');
    await click(tip?.querySelector('.ant-alert-close-icon'));
    await until(() => !view?.byTestId('upgrade-tip'));
    expect(localStorage.getItem(TIP_DISMISSED_KEY)).toBe('V1.3.0 release1');

    // The next visit shows no tip for the same version.
    view?.unmount();
    resetUpgradeStore();
    await mount();
    expect(view?.byTestId('upgrade-tip')).toBeNull();
  });

  it('the tip downloads; the finished background download opens the confirm', async () => {
    await mount();
    await click(view?.byTestId('upgrade-tip-download'));
    expect(count('/api/upgrade/download')).toBe(1);
    downloaded = 1000;
    await until(() => view?.byTestId('upgrade-confirm'), 8_000);
    expect(view?.byTestId('upgrade-confirm')?.textContent).toContain('V1.3.0 release1');
  });

  it('confirm starts with save_config (checked by default), toasts and opens /upgrading', async () => {
    await mount();
    requestConfirm('download');
    await until(() => view?.byTestId('upgrade-confirm'));
    const box = saveConfigBox();
    expect(box?.checked).toBe(true);
    await click(dialogButton('upgrade-confirm', 'confirm-ok'));
    await until(() => view?.byTestId('at-upgrading'));
    const start = requests.find((r) => r.path === '/api/upgrade/start');
    expect(start?.method).toBe('POST');
    expect(start?.query.get('save_config')).toBe('1');
    expect(document.body.textContent).toContain(en.upgrade.started);
  });

  it('unchecked save-config sends save_config=0; a bad signature says so once', async () => {
    // Our device stops at the bad signature: firmware_valid is false too (never checked).
    startAnswer = () =>
      envelope(200, {
        status: 'Upgrade failed',
        signature_valid: false,
        firmware_valid: false,
        message: 'the signature is not from a trusted key',
        stdout: '',
        stderr: '',
      });
    await mount();
    requestConfirm('upload');
    await until(() => view?.byTestId('upgrade-confirm'));
    await click(saveConfigBox());
    await click(dialogButton('upgrade-confirm', 'confirm-ok'));
    await until(() => document.body.textContent?.includes(en.upgrade.signatureInvalid));
    // Issue 21: the toast said it twice (the text and the device's words for the same thing).
    const toasts = () => [...document.querySelectorAll('.ant-message-notice')];
    expect(toasts().map((n) => n.textContent)).toEqual([en.upgrade.signatureInvalid]);
    // A second try that fails the same way replaces the toast instead of stacking another.
    requestConfirm('upload');
    await until(() => view?.byTestId('upgrade-confirm'));
    await click(dialogButton('upgrade-confirm', 'confirm-ok'));
    await until(() => count('/api/upgrade/start') === 2);
    await flush();
    expect(toasts().map((n) => n.textContent)).toEqual([en.upgrade.signatureInvalid]);
    expect(requests.find((r) => r.path === '/api/upgrade/start')?.query.get('save_config')).toBe(
      '0',
    );
    expect(view?.byTestId('at-upgrading')).toBeNull();
  });

  it('damaged files say the package is damaged, with the file the device names', async () => {
    startAnswer = () =>
      envelope(200, {
        status: 'Upgrade failed',
        signature_valid: true,
        firmware_valid: false,
        message: 'server/main.js: sha256 mismatch',
        stdout: '',
        stderr: '',
      });
    await mount();
    requestConfirm('upload');
    await until(() => view?.byTestId('upgrade-confirm'));
    await click(dialogButton('upgrade-confirm', 'confirm-ok'));
    await until(() => document.body.textContent?.includes(en.upgrade.firmwareInvalid));
    expect(document.body.textContent).toContain('server/main.js: sha256 mismatch');
  });

  it('an older release asks to confirm the downgrade; yes starts with allow_downgrade=1', async () => {
    let refuse = true;
    startAnswer = () =>
      refuse
        ? envelope(409, {
            error: 'UpgradeDowngradeError',
            error_msg: 'The package (V1.1.0) is older than the running version (V1.2.0 release1)',
            package_version: 'V1.1.0',
            local_version: 'V1.2.0 release1',
          })
        : envelope(200, { status: 'Upgrade started', stdout: '', stderr: '', id: 'd1' });
    await mount();
    requestConfirm('upload');
    await until(() => view?.byTestId('upgrade-confirm'));
    await click(dialogButton('upgrade-confirm', 'confirm-ok'));
    await until(() => view?.byTestId('upgrade-downgrade'));
    expect(view?.byTestId('upgrade-downgrade')?.textContent).toContain(
      'The package is V1.1.0, older than the running firmware V1.2.0 release1.',
    );
    expect(dialogButton('upgrade-downgrade', 'confirm-ok')?.textContent).toBe(
      en.upgrade.downgradeOk,
    );
    // No failure toast: the dialog is the answer.
    expect(document.querySelector('.ant-message-notice')).toBeNull();
    const first = requests.find((r) => r.path === '/api/upgrade/start');
    expect(first?.query.get('allow_downgrade')).toBeNull();
    refuse = false;
    await click(dialogButton('upgrade-downgrade', 'confirm-ok'));
    await until(() => view?.byTestId('at-upgrading'));
    const second = requests.filter((r) => r.path === '/api/upgrade/start')[1];
    expect(second?.query.get('allow_downgrade')).toBe('1');
    expect(second?.query.get('save_config')).toBe('1');
  });

  it('not confirming the downgrade installs nothing', async () => {
    startAnswer = () =>
      envelope(409, {
        error: 'UpgradeDowngradeError',
        error_msg: 'older',
        package_version: 'V1.1.0',
        local_version: 'V1.2.0 release1',
      });
    await mount();
    requestConfirm('upload');
    await until(() => view?.byTestId('upgrade-confirm'));
    await click(dialogButton('upgrade-confirm', 'confirm-ok'));
    await until(() => view?.byTestId('upgrade-downgrade'));
    await click(dialogButton('upgrade-downgrade', 'confirm-cancel'));
    await until(() => getUpgradeState().downgrade === null);
    expect(count('/api/upgrade/start')).toBe(1);
    expect(view?.byTestId('at-upgrading')).toBeNull();
  });

  it('any other failure shows Upgrade failed (try again or upload a new package) and the message', async () => {
    startAnswer = () =>
      envelope(200, { status: 'Upgrade failed', message: 'broken', stdout: '', stderr: '' });
    await mount();
    requestConfirm('upload');
    await until(() => view?.byTestId('upgrade-confirm'));
    await click(dialogButton('upgrade-confirm', 'confirm-ok'));
    await until(() => document.body.textContent?.includes(en.upgrade.failed));
    expect(document.body.textContent).toContain('(broken)');
  });

  it('cancelling the confirm of a download asks whether to cancel the download', async () => {
    await mount();
    requestConfirm('download');
    await until(() => view?.byTestId('upgrade-confirm'));
    await click(dialogButton('upgrade-confirm', 'confirm-cancel'));
    await until(() => view?.byTestId('upgrade-ask-cancel-download'));
    // Two buttons that cannot be mistaken for each other (issue 21: "Cancel" / "Cancel download").
    expect(dialogButton('upgrade-ask-cancel-download', 'confirm-cancel')?.textContent).toBe(
      en.upgrade.keepDownload,
    );
    expect(dialogButton('upgrade-ask-cancel-download', 'confirm-ok')?.textContent).toBe(
      en.upgrade.cancelDownload,
    );
    await click(dialogButton('upgrade-ask-cancel-download', 'confirm-ok'));
    await until(() => count('/api/upgrade/download_cancel') === 1);
    expect(count('/api/upgrade/start')).toBe(0);
  });
});

describe('UpgradeControl', () => {
  it('while open, a finished download waits for its Upgrade button instead of popping up', async () => {
    await mount(true);
    expect(view?.byTestId('upgrade-latest')?.textContent).toBe('V1.3.0 release1');
    expect(view?.byTestId('upgrade-control')?.textContent).toContain('Faster video');
    await click(view?.byTestId('upgrade-download'));
    await until(() => view?.byTestId('upgrade-download-progress'));
    downloaded = 1000;
    await until(() => view?.byTestId('upgrade-now'), 8_000);
    expect(view?.byTestId('upgrade-confirm')).toBeNull();
    await click(view?.byTestId('upgrade-now'));
    await until(() => view?.byTestId('upgrade-confirm'));
  });

  it('uploads a package with progress and speed, then asks to confirm', async () => {
    const sent: Array<{ url: string; body: unknown; xhr: Record<string, unknown> }> = [];
    class FakeXhr {
      upload: { onprogress: ((e: ProgressEvent) => void) | null } = { onprogress: null };
      onload: (() => void) | null = null;
      onerror = null;
      onabort = null;
      ontimeout = null;
      timeout = -1;
      status = 0;
      responseText = '';
      url = '';
      open(_m: string, url: string) {
        this.url = url;
      }
      setRequestHeader() {}
      send(body: unknown) {
        sent.push({ url: this.url, body, xhr: this as unknown as Record<string, unknown> });
      }
      abort() {}
    }
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    await mount(true);
    const input = view?.byTestId('upgrade-file') as HTMLInputElement;
    const file = new File([new Uint8Array(2048)], 'kvm.pkg');
    Object.defineProperty(input, 'files', { value: [file], configurable: true });
    await act(async () => input.dispatchEvent(new Event('change', { bubbles: true })));
    expect(sent[0]?.url).toBe('/api/upgrade/upload');
    const xhr = sent[0]?.xhr as unknown as FakeXhr;
    await act(async () =>
      xhr.upload.onprogress?.(
        new ProgressEvent('progress', { loaded: 1024, total: 2048, lengthComputable: true }),
      ),
    );
    await until(() => view?.byTestId('upgrade-upload-progress'));
    expect(view?.byTestId('upgrade-upload-progress')?.textContent).toContain('50%');
    xhr.status = 200;
    xhr.responseText = JSON.stringify({ ok: true, result: { filename: 'kvm.pkg', size: 2048 } });
    await act(async () => xhr.onload?.());
    await until(() => view?.byTestId('upgrade-confirm'));
    expect(view?.byTestId('upgrade-confirm')?.textContent).toContain(en.upgrade.confirmUploaded);
  });

  it('says plainly when the device cannot install (can_install false): nothing to download', async () => {
    status = { enabled: true, can_install: false, in_progress: false, last_upgrade: null };
    await mount(true);
    await until(() => view?.byTestId('upgrade-cannot-install'));
    expect(view?.byTestId('upgrade-cannot-install')?.textContent).toBe(en.upgrade.cannotInstall);
    expect(view?.byTestId('upgrade-latest')?.textContent).toBe('V1.3.0 release1');
    for (const id of ['upgrade-download', 'upgrade-upload', 'upgrade-tip-download']) {
      expect(view?.byTestId(id), id).toBeNull();
    }
    expect(view?.byTestId('upgrade-tip')?.textContent).toContain(en.upgrade.cannotInstall);
  });

  it('a device that can install (or has no status route) shows no such warning', async () => {
    status = { enabled: true, can_install: true, in_progress: false, last_upgrade: null };
    await mount(true);
    await until(() => getUpgradeState().status);
    expect(view?.byTestId('upgrade-cannot-install')).toBeNull();
    expect(view?.byTestId('upgrade-download')).not.toBeNull();
    expect(view?.byTestId('upgrade-outcome')).toBeNull();
  });

  it('shows the last upgrade once: Upgraded from X to Y', async () => {
    status = {
      enabled: true,
      can_install: true,
      in_progress: false,
      last_upgrade: {
        id: 'u1',
        result: 'success',
        from_version: 'V0.1.0',
        to_version: 'V0.1.1',
        reason: null,
        save_config: true,
        finished_at: '2026-11-24T08:00:00.000Z',
      },
    };
    await mount(true);
    await until(() => view?.byTestId('upgrade-outcome'));
    expect(view?.byTestId('upgrade-outcome')?.textContent).toBe('Upgraded from V0.1.0 to V0.1.1');

    // Closing the control counts it as shown; the next opening (even after a reload) has none.
    view?.unmount();
    expect(localStorage.getItem(OUTCOME_SEEN_KEY)).toBe('u1');
    resetUpgradeStore();
    await mount(true);
    await until(() => getUpgradeState().status);
    await flush();
    expect(view?.byTestId('upgrade-outcome')).toBeNull();
  });

  it('a rolled-back upgrade: The upgrade to Y failed: <reason>; X was restored', async () => {
    const reason =
      'The new version V0.1.1 exited with code 1 before it was healthy; V0.1.0 is back';
    status = {
      enabled: true,
      can_install: true,
      in_progress: false,
      last_upgrade: {
        id: 'u2',
        result: 'failed',
        from_version: 'V0.1.0',
        to_version: 'V0.1.1',
        reason,
        save_config: true,
        finished_at: '2026-11-24T08:00:00.000Z',
      },
    };
    await mount(true);
    await until(() => view?.byTestId('upgrade-outcome'));
    const outcome = view?.byTestId('upgrade-outcome');
    expect(outcome?.dataset.result).toBe('failed');
    expect(outcome?.textContent).toBe(
      `The upgrade to V0.1.1 failed: ${reason}; V0.1.0 was restored`,
    );
  });
});
