import { act } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { theme } from 'antd';
import { AppProviders } from '../app/Providers';
import { render, type Rendered } from '../test/render';
import { usePrefersReducedMotion } from './reduced-motion';

/** A stand-in for the system setting: `matches` and the change listeners of one query. */
function fakeMotionSetting(initial: boolean) {
  const listeners = new Set<() => void>();
  const list = {
    matches: initial,
    addEventListener: (_: string, l: () => void) => listeners.add(l),
    removeEventListener: (_: string, l: () => void) => listeners.delete(l),
  };
  const queries: string[] = [];
  vi.stubGlobal('matchMedia', (query: string) => {
    queries.push(query);
    return list;
  });
  return {
    listeners,
    queries,
    set(reduce: boolean) {
      list.matches = reduce;
      act(() => listeners.forEach((l) => l()));
    },
  };
}

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
});

function Flag() {
  return <span data-testid="flag">{String(usePrefersReducedMotion())}</span>;
}

function MotionToken() {
  const { token } = theme.useToken();
  return <span data-testid="motion">{String(token.motion)}</span>;
}

describe('the system setting "reduce motion"', () => {
  it('is read from the media query and followed live; the listener goes with the component', async () => {
    const setting = fakeMotionSetting(false);
    view = await render(<Flag />);
    expect(view.byTestId('flag')!.textContent).toBe('false');
    expect(setting.queries).toContain('(prefers-reduced-motion: reduce)');
    setting.set(true);
    expect(view.byTestId('flag')!.textContent).toBe('true');
    setting.set(false);
    expect(view.byTestId('flag')!.textContent).toBe('false');
    view.unmount();
    view = undefined;
    expect(setting.listeners.size).toBe(0);
  });

  it('turns antd motion off in the console while set, and on again when cleared', async () => {
    const setting = fakeMotionSetting(true);
    view = await render(
      <AppProviders>
        <MotionToken />
      </AppProviders>,
    );
    expect(view.byTestId('motion')!.textContent).toBe('false');
    setting.set(false);
    expect(view.byTestId('motion')!.textContent).toBe('true');
  });

  it('reads as not set where the browser has no matchMedia', async () => {
    vi.stubGlobal('matchMedia', undefined);
    view = await render(<Flag />);
    expect(view.byTestId('flag')!.textContent).toBe('false');
  });
});
