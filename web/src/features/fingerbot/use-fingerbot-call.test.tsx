import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import { ApiError } from '../../lib/api';
import { renderHook, toasts, type RenderedHook } from '../../test/hook';
import { flush } from '../../test/render';
import { useFingerbotCall, type FingerbotCall } from './use-fingerbot-call';

let hook: RenderedHook<FingerbotCall> | undefined;

function call(): FingerbotCall {
  if (!hook) throw new Error('not rendered');
  return hook.current();
}

beforeEach(async () => {
  // Shows what a section's button would: whether its call runs.
  hook = await renderHook(useFingerbotCall, (current) => (
    <div data-testid="probe" data-busy={String(current.busy)} />
  ));
});

afterEach(() => {
  hook?.view.unmount();
  hook = undefined;
  document.body.innerHTML = '';
});

const busy = () => hook?.view.byTestId('probe')?.dataset['busy'];

describe('useFingerbotCall', () => {
  it('is busy while the call runs, then toasts the success', async () => {
    let finish: () => void = () => undefined;
    let done: Promise<boolean> | undefined;
    act(() => {
      done = call().run(() => new Promise<void>((resolve) => (finish = resolve)), {
        success: 'pressed',
        failure: 'press failed',
      });
    });
    expect(busy()).toBe('true');
    await act(async () => finish());
    expect(await done).toBe(true);
    await flush();
    expect(busy()).toBe('false');
    expect(toasts()).toEqual(['pressed']);
  });

  it('toasts a failure with the server reason and does not reject', async () => {
    let ok: boolean | undefined;
    await act(async () => {
      ok = await call().run(
        () => Promise.reject(new ApiError(503, { error: 'FingerbotError', error_msg: 'asleep' })),
        { failure: 'press failed' },
      );
    });
    await flush();
    expect(ok).toBe(false);
    expect(busy()).toBe('false');
    expect(toasts()).toEqual(['press failed: asleep']);
  });
});
