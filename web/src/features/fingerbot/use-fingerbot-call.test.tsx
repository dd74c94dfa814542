import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act, useEffect } from 'react';
import { NotifyProvider } from '../../components/notify';
import { ApiError } from '../../lib/api';
import { flush, render, type Rendered } from '../../test/render';
import { useFingerbotCall, type FingerbotCall } from './use-fingerbot-call';

const latest: { current: FingerbotCall | null } = { current: null };

function call(): FingerbotCall {
  if (!latest.current) throw new Error('not rendered');
  return latest.current;
}

/** Shows what a section's button would: whether its call runs. */
function Probe() {
  const current = useFingerbotCall();
  useEffect(() => {
    latest.current = current;
  });
  return <div data-testid="probe" data-busy={String(current.busy)} />;
}

const toasts = () =>
  [...document.querySelectorAll('.ant-message-notice')].map((el) => el.textContent);

let view: Rendered | undefined;

beforeEach(async () => {
  view = await render(
    <NotifyProvider>
      <Probe />
    </NotifyProvider>,
  );
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  document.body.innerHTML = '';
});

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
    expect(view?.byTestId('probe')?.dataset['busy']).toBe('true');
    await act(async () => finish());
    expect(await done).toBe(true);
    await flush();
    expect(view?.byTestId('probe')?.dataset['busy']).toBe('false');
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
    expect(view?.byTestId('probe')?.dataset['busy']).toBe('false');
    expect(toasts()).toEqual(['press failed: asleep']);
  });
});
