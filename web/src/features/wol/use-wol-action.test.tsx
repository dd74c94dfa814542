import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import { ApiError } from '../../lib/api';
import { renderHook, toasts, type RenderedHook } from '../../test/hook';
import { flush } from '../../test/render';
import { useWolAction, type WolActions } from './use-wol-action';

const refused = () =>
  Promise.reject(new ApiError(500, { error: 'WolSendError', error_msg: 'no route' }));

let hook: RenderedHook<WolActions> | undefined;

function actions(): WolActions {
  if (!hook) throw new Error('not rendered');
  return hook.current();
}

beforeEach(async () => {
  // Shows what the panel would: its error line.
  hook = await renderHook(useWolAction, (current) => (
    <div data-testid="probe">{current.error}</div>
  ));
});

afterEach(() => {
  hook?.view.unmount();
  hook = undefined;
  document.body.innerHTML = '';
});

const errorLine = () => hook?.view.byTestId('probe')?.textContent;

describe('useWolAction', () => {
  it('shows a failure with the server reason in the panel and as a toast, and never rejects', async () => {
    let ok: boolean | undefined;
    await act(async () => {
      ok = await actions().run(refused, { success: 'woken', failure: 'wake failed' });
    });
    await flush();
    expect(ok).toBe(false);
    expect(errorLine()).toBe('wake failed: no route');
    expect(toasts()).toContain('wake failed: no route');
  });

  it('keeps a dialog’s failure out of the panel, and clears the line only when asked', async () => {
    await act(async () => {
      await actions().run(refused, { success: 'x', failure: 'rename failed', toastOnly: true });
    });
    await flush();
    expect(errorLine()).toBe('');
    expect(toasts()).toContain('rename failed: no route');

    act(() => actions().showError('could not read the list', new Error('local')));
    expect(errorLine()).toBe('could not read the list');
    await act(async () => {
      await actions().run(async () => undefined, { success: 'removed', failure: 'x' });
    });
    expect(errorLine()).toBe('could not read the list');
    await act(async () => {
      await actions().run(async () => undefined, {
        success: 'woken',
        failure: 'x',
        clearsError: true,
      });
    });
    await flush();
    expect(errorLine()).toBe('');
    expect(toasts()).toEqual(expect.arrayContaining(['removed', 'woken']));
  });
});
