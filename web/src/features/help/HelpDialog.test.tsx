import { act } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NotifyProvider } from '../../components/notify';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, render, type Rendered, renderPanel } from '../../test/render';
import { useInfo } from '../device-info/info-store';
import { click, typeInto } from '../system/test-utils';
import SystemGroup from '../settings/SystemGroup';
import { getEmbed } from '../../lib/embed';
import { exportLogs } from './help-api';
import { waitForFirstRun } from '../system/reset-api';
import HelpDialog from './HelpDialog';
import SupportForm from './SupportForm';

function setFiles(view: Rendered, files: File[]): void {
  const input = view.byTestId('support-images') as HTMLInputElement;
  Object.defineProperty(input, 'files', { configurable: true, value: files });
  act(() => {
    input.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

const png = (name: string, size = 16) =>
  new File(
    [new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), new Uint8Array(size)],
    name,
    {
      type: 'image/png',
    },
  );

describe('HelpDialog', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
    useInfo.setState({}, true);
  });

  it('shows version, model and device id, and exports the log zip', async () => {
    useInfo.setState({
      system: {
        product: {
          name: 'KVM console',
          version: '1.2.3',
          model: 'RM1',
          target: 'testbed',
          device_id: '3F2A-91C0-7B44-E1D9',
        },
      },
      meta: { kvm: {}, server: { host: 'kvm-host' } },
    } as never);
    const { requests } = stubFetch({
      '/api/upgrade/version': () => envelope(200, { model: 'RM1', firmware: '1.2.3' }),
      '/api/upgrade/log': () =>
        new Response(new Uint8Array([0x50, 0x4b, 5, 6]), {
          headers: {
            'content-type': 'application/zip',
            'content-disposition': 'attachment; filename=system_logs_20260101_000000.zip',
          },
        }),
    });
    const created = vi.fn(() => 'blob:x');
    vi.stubGlobal(
      'URL',
      Object.assign(URL, { createObjectURL: created, revokeObjectURL: vi.fn() }),
    );
    const clicked: string[] = [];
    vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (
      this: HTMLAnchorElement,
    ) {
      clicked.push(this.download);
    });
    view = await renderPanel(<HelpDialog onClose={() => undefined} />);
    // SPEC 4's spelling, as the upgrade control's versions (issue 21: "0.1.0" beside "V0.2.0").
    expect(view.byTestId('about-version')?.textContent).toBe('V1.2.3');
    expect(view.byTestId('about-model')?.textContent).toBe('RM1');
    // The device's id, not its host name (issue 21: "Device ID: vm").
    expect(view.byTestId('about-device-id')?.textContent).toBe('3F2A-91C0-7B44-E1D9');
    expect(document.body.textContent).not.toContain('kvm-host');
    // Taller content scrolls inside the dialog, which fits the window (issue 21: 800 px).
    const body = document.querySelector<HTMLElement>('.ant-modal-body');
    expect(body?.style.overflowY).toBe('auto');
    expect(body?.style.maxHeight).toMatch(/^calc\(100vh - \d+px\)$/);
    click(view, 'export-logs');
    await vi.waitFor(() => expect(clicked).toEqual(['system_logs_20260101_000000.zip']));
    expect(requests.some((r: RecordedRequest) => r.path === '/api/upgrade/log')).toBe(true);
    expect(created).toHaveBeenCalledTimes(1);
  });
});

describe('SupportForm', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
  });

  it('requires a message and applies the image rules before sending anything', async () => {
    const { requests } = stubFetch({});
    view = await render(<SupportForm />);
    click(view, 'support-submit');
    await flush();
    expect(view.byTestId('support-error')?.textContent).toContain('Please enter a message');
    setFiles(view, [new File(['x'], 'a.bmp')]);
    await flush();
    expect(view.byTestId('support-error')?.textContent).toContain(
      'Only JPG, JPEG, GIF or PNG images can be uploaded',
    );
    const big = png('big.png');
    Object.defineProperty(big, 'size', { value: 10 * 1024 * 1024 + 1 });
    setFiles(view, [big]);
    await flush();
    expect(view.byTestId('support-error')?.textContent).toContain('at most 10 MB');
    setFiles(
      view,
      Array.from({ length: 9 }, (_, i) => png(`${i}.png`)),
    );
    await flush();
    expect(view.byTestId('support-error')?.textContent).toContain('At most 8 images');
    expect(requests.map((r) => r.path)).toEqual(['/api/support/bundles']);
  });

  it('sends message, contact and images with progress, and says where the request went', async () => {
    const sent: FormData[] = [];
    let release: () => void = () => undefined;
    class FakeXhr {
      status = 0;
      responseText = '';
      headers: Record<string, string> = {};
      upload: { onprogress: ((e: ProgressEvent) => void) | null } = { onprogress: null };
      onload: (() => void) | null = null;
      onerror: (() => void) | null = null;
      ontimeout: (() => void) | null = null;
      url = '';
      open(_method: string, url: string) {
        this.url = url;
      }
      setRequestHeader(k: string, v: string) {
        this.headers[k] = v;
      }
      send(body: FormData) {
        sent.push(body);
        this.upload.onprogress?.({
          lengthComputable: true,
          loaded: 50,
          total: 100,
        } as ProgressEvent);
        release = () => {
          this.status = 200;
          this.responseText = JSON.stringify({
            ok: true,
            result: { delivered: 'saved', bundle: 'support_20260101_000000.zip' },
          });
          this.onload?.();
        };
      }
    }
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    let saved: Array<{ name: string; size: number }> = [];
    stubFetch({ '/api/support/bundles': () => envelope(200, { bundles: saved }) });
    view = await render(<SupportForm />);
    expect(view.byTestId('support-bundles')).toBeNull();
    saved = [{ name: 'support_20260101_000000.zip', size: 1000 }];
    typeInto(view.byTestId('support-message'), 'No video');
    typeInto(view.byTestId('support-contact'), 'me@example.com');
    setFiles(view, [png('a.png'), png('b.png')]);
    await flush();
    expect(view.byTestId('support-image-count')?.textContent).toBe('2 of 8 images');
    click(view, 'support-submit');
    await flush();
    expect(view.byTestId('support-progress')?.textContent).toContain('50%');
    act(() => release());
    await vi.waitFor(() =>
      expect(view!.byTestId('support-result')?.textContent).toContain(
        'support_20260101_000000.zip',
      ),
    );
    expect(view.byTestId('support-progress')).toBeNull();
    await vi.waitFor(() =>
      expect(view!.byTestId('support-bundles')?.textContent).toContain(
        'support_20260101_000000.zip',
      ),
    );
    expect(sent).toHaveLength(1);
    const body = sent[0]!;
    expect(body.get('message')).toBe('No video');
    expect(body.get('contact')).toBe('me@example.com');
    expect((body.get('image1') as File).name).toBe('a.png');
    expect((body.get('image2') as File).name).toBe('b.png');
  });

  it('shows the server refusal', async () => {
    class FakeXhr {
      status = 0;
      responseText = '';
      upload = { onprogress: null };
      onload: (() => void) | null = null;
      open() {}
      setRequestHeader() {}
      send() {
        this.status = 400;
        this.responseText = JSON.stringify({
          ok: false,
          result: {
            error: 'ValidatorError',
            error_msg: 'image1: only JPG, JPEG, GIF or PNG images',
          },
        });
        queueMicrotask(() => this.onload?.());
      }
    }
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    stubFetch({ '/api/support/bundles': () => envelope(200, { bundles: [] }) });
    view = await render(<SupportForm />);
    typeInto(view.byTestId('support-message'), 'm');
    click(view, 'support-submit');
    await vi.waitFor(() =>
      expect(view!.byTestId('support-error')?.textContent).toContain('image1: only JPG'),
    );
  });
});

describe('Reset to defaults (system group)', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('resets only after the confirm dialog, which says what is lost', async () => {
    const paths: string[] = [];
    stubFetch({
      '/api/upgrade/reset_default': (req) => {
        paths.push(req.path);
        return envelope(200, { status: 'Reset to factory default started' });
      },
    });
    const view = await render(
      <NotifyProvider>
        <SystemGroup />
      </NotifyProvider>,
    );
    try {
      await flush();
      click(view, 'system-reset');
      await flush();
      expect(document.body.textContent).toContain('the TLS certificate and the logs are kept');
      expect(paths).toEqual([]);
      click(view, 'confirm-ok');
      await vi.waitFor(() => expect(paths).toEqual(['/api/upgrade/reset_default']));
    } finally {
      view.unmount();
    }
  });
});

describe('help-api', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  it('embedded, asks the host to download the log zip instead of fetching it', async () => {
    const { requests } = stubFetch({});
    const asked = vi.spyOn(getEmbed(), 'requestDownload').mockReturnValue(true);
    await exportLogs();
    expect(asked).toHaveBeenCalledTimes(1);
    expect(asked.mock.calls[0]![0]).toMatch(/^https?:\/\/[^/]+\/api\/upgrade\/log$/);
    expect(requests).toEqual([]);
  });

  it('after a reset, goes to /init once the device answers not initialised', async () => {
    let answers = 0;
    stubFetch({
      '/api/init/is_inited': () => {
        answers += 1;
        // gone twice (restarting), then back in first-run state
        if (answers <= 2) return envelope(503, { error: 'ServiceUnavailableError', error_msg: '' });
        return envelope(200, { is_inited: false, country_code: 'US' });
      },
    });
    const go = vi.fn();
    expect(await waitForFirstRun({ go, pollMs: 5, waitMs: 5000 })).toBe(true);
    expect(go).toHaveBeenCalledWith('/init');
    expect(answers).toBe(3);
  });

  it('gives up after its time without navigating', async () => {
    stubFetch({ '/api/init/is_inited': () => envelope(200, { is_inited: true }) });
    const go = vi.fn();
    expect(await waitForFirstRun({ go, pollMs: 5, waitMs: 30 })).toBe(false);
    expect(go).not.toHaveBeenCalled();
  });
});
