import { afterEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { click } from '../../test/dom';
import { FakeXhr } from '../../test/fake-xhr';
import { flush, render, type Rendered } from '../../test/render';
import { StatusLine } from '../app/FleetApp';
import FilesPage from './FilesPage';

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  FakeXhr.last = null;
});

describe('FilesPage', () => {
  it('uploads by PUT files/:kind/:name with progress, then lists the file', async () => {
    const listed: unknown[] = [];
    stubFetch({ '/cloud-basic/v1/files': () => envelope(200, { files: listed }) });
    vi.stubGlobal('XMLHttpRequest', FakeXhr);
    view = await render(
      <>
        <StatusLine />
        <FilesPage />
      </>,
    );
    await flush();
    const kind = view.byTestId('file-kind') as HTMLSelectElement;
    act(() => {
      kind.value = 'package';
      kind.dispatchEvent(new Event('change', { bubbles: true }));
    });
    const input = view.byTestId('file-input') as HTMLInputElement;
    const file = new File([new Uint8Array(1000)], 'fw v1.tar', { type: 'application/x-tar' });
    Object.defineProperty(input, 'files', { value: [file] });
    act(() => {
      input.dispatchEvent(new Event('change', { bubbles: true }));
    });
    click(view.byTestId('file-upload'));
    await flush();
    const xhr = FakeXhr.last!;
    expect(xhr.method).toBe('PUT');
    expect(xhr.url).toBe('/cloud-basic/v1/files/package/fw%20v1.tar');
    expect(xhr.body).toBe(file);
    act(() => xhr.progress(500, 1000));
    expect(view.byTestId('file-progress')?.textContent).toContain('50%');
    listed.push({
      id: 'f1',
      kind: 'package',
      name: 'fw v1.tar',
      size: 1000,
      sha256: 'ab'.repeat(32),
      version: '1.2.3',
      created_at: 1,
    });
    act(() => xhr.answer(200, { ok: true, result: listed[0] }));
    await flush();
    expect(view.byTestId('status')?.textContent).toBe('fw v1.tar was uploaded');
    expect(view.byTestId('file-progress')).toBeNull();
    expect(document.querySelector('[data-testid="file-row"]')?.getAttribute('data-file-id')).toBe(
      'f1',
    );
  });
});
