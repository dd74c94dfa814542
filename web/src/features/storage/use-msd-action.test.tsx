import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import { ApiError } from '../../lib/api';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { renderHook, toasts, type RenderedHook } from '../../test/hook';
import { flush } from '../../test/render';
import { resetMsdForTests } from './msd-store';
import { TransferError } from './upload';
import { useMsdAction, type MsdActions } from './use-msd-action';

let hook: RenderedHook<MsdActions> | undefined;

/** The hook's object of the last render. */
function actions(): MsdActions {
  if (!hook) throw new Error('not rendered');
  return hook.current();
}

/** A piece of work the test finishes by hand. */
function deferred() {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

let requests: RecordedRequest[];

beforeEach(async () => {
  resetMsdForTests();
  ({ requests } = stubFetch({ '/api/msd': () => envelope(200, { enabled: false }) }));
  // Shows what a section would: the busy name and the panel error.
  hook = await renderHook(useMsdAction, (current) => (
    <div data-testid="probe" data-busy={current.busy ?? ''}>
      {current.error}
    </div>
  ));
});

afterEach(() => {
  hook?.view.unmount();
  hook = undefined;
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

const probe = () => hook?.view.byTestId('probe');

describe('useMsdAction', () => {
  it('is busy with the action name while the work runs, then reloads the state', async () => {
    const work = deferred();
    let done: Promise<boolean> | undefined;
    act(() => {
      done = actions().run('format', () => work.promise, { failure: 'format failed' });
    });
    expect(probe()?.dataset['busy']).toBe('format');
    expect(requests).toEqual([]);
    await act(async () => work.resolve());
    expect(await done).toBe(true);
    await flush();
    expect(probe()?.dataset['busy']).toBe('');
    expect(requests.map((r) => r.path)).toEqual(['/api/msd']);
  });

  it('runs no second action while one runs', async () => {
    const work = deferred();
    const second = vi.fn(async () => {});
    let first: Promise<boolean> | undefined;
    let again: Promise<boolean> | undefined;
    act(() => {
      first = actions().run('mount:a.iso', () => work.promise, { failure: 'x' });
      // The same click twice before React re-renders: the guard is not the busy state.
      again = actions().run('mount:a.iso', second, { failure: 'x' });
    });
    expect(await again).toBe(false);
    expect(second).not.toHaveBeenCalled();
    await act(async () => work.resolve());
    expect(await first).toBe(true);
    await act(async () => {
      expect(await actions().run('unmount', second, { failure: 'x' })).toBe(true);
    });
    expect(second).toHaveBeenCalledTimes(1);
  });

  it("shows a failure with the server's reason in the panel and a toast", async () => {
    await act(async () => {
      const ok = await actions().run(
        'unmount',
        () => Promise.reject(new ApiError(500, { error: 'MsdError', error_msg: 'drive is gone' })),
        { failure: 'action failed', success: 'unmounted' },
      );
      expect(ok).toBe(false);
    });
    await flush();
    expect(probe()?.textContent).toBe('action failed: drive is gone');
    expect(toasts()).toEqual(['action failed: drive is gone']);
    expect(probe()?.dataset['busy']).toBe('');
  });

  it('keeps the bare SPEC text in the toast when asked (mount failed)', async () => {
    await act(async () => {
      await actions().run(
        'mount:a.iso',
        () => Promise.reject(new ApiError(500, { error: 'X', error_msg: 'busy' })),
        {
          failure: 'mount failed',
          detailInToast: false,
        },
      );
    });
    await flush();
    expect(probe()?.textContent).toBe('mount failed: busy');
    expect(toasts()).toEqual(['mount failed']);
  });

  it('clears the last error on success and toasts the success', async () => {
    act(() => actions().fail('invalid URL'));
    expect(probe()?.textContent).toBe('invalid URL');
    await act(async () => {
      await actions().run('partition', async () => {}, { failure: 'x', success: 'connected' });
    });
    await flush();
    expect(probe()?.textContent).toBe('');
    expect(toasts()).toContain('connected');
  });

  it('reports a cancelled transfer as news, not as an error', async () => {
    act(() => actions().failTransfer(new TransferError('cancelled')));
    await flush();
    expect(probe()?.textContent).toBe('');
    expect(toasts()).toHaveLength(1);
  });
});
