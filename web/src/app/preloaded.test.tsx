import { Suspense } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { flush, render } from '../test/render';
import { preloadedLazy } from './preloaded';

function Page({ label }: { label: string }) {
  return <div data-testid="page">{label}</div>;
}

describe('preloadedLazy (issue 28: a preloaded chunk does not suspend again)', () => {
  it('once loaded, renders the module at once: no fallback, no suspending', async () => {
    const { Component, load } = preloadedLazy<{ label: string }>(async () => ({ default: Page }));
    await load();
    const view = await render(
      <Suspense fallback={<div data-testid="fallback" />}>
        <Component label="now" />
      </Suspense>,
    );
    // rendered in the first commit
    expect(view.byTestId('fallback')).toBeNull();
    expect(view.byTestId('page')?.textContent).toBe('now');
    view.unmount();
  });

  it('not loaded yet: suspends like React.lazy, then shows the module', async () => {
    const { Component } = preloadedLazy<{ label: string }>(async () => ({ default: Page }));
    const view = await render(
      <Suspense fallback={<div data-testid="fallback" />}>
        <Component label="later" />
      </Suspense>,
    );
    await flush();
    await vi.waitFor(() => expect(view.byTestId('page')?.textContent).toBe('later'));
    expect(view.byTestId('fallback')).toBeNull();
    view.unmount();
  });

  it('preload under way: the fallback without suspending, then the module (no reveal throttle)', async () => {
    let resolve: (m: { default: typeof Page }) => void = () => undefined;
    const { Component, load } = preloadedLazy<{ label: string }>(
      () => new Promise((r) => (resolve = r)),
      <div data-testid="waiting" />,
    );
    void load();
    const view = await render(
      <Suspense fallback={<div data-testid="fallback" />}>
        <Component label="soon" />
      </Suspense>,
    );
    expect(view.byTestId('waiting')).not.toBeNull();
    expect(view.byTestId('fallback')).toBeNull();
    resolve({ default: Page });
    await vi.waitFor(() => expect(view.byTestId('page')?.textContent).toBe('soon'));
    expect(view.byTestId('fallback')).toBeNull();
    view.unmount();
  });
});
