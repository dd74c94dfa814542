/** Renders a panel's hook on its own (inside the toasts' provider) and reads what it returns. */
import { useEffect, type ReactNode } from 'react';
import { NotifyProvider } from '../components/notify';
import { render, type Rendered } from './render';

export interface RenderedHook<T> {
  view: Rendered;
  /** What the hook returned at the last render. */
  current(): T;
}

/**
 * `show` draws what a panel would from the hook's value (its busy name, its error line) in the
 * element with the test id `probe`.
 */
export async function renderHook<T>(
  useHook: () => T,
  show: (value: T) => ReactNode = () => null,
): Promise<RenderedHook<T>> {
  const latest: { value?: T; set: boolean } = { set: false };
  function Probe() {
    const value = useHook();
    useEffect(() => {
      latest.value = value;
      latest.set = true;
    });
    return <>{show(value)}</>;
  }
  const view = await render(
    <NotifyProvider>
      <Probe />
    </NotifyProvider>,
  );
  return {
    view,
    current: () => {
      if (!latest.set) throw new Error('not rendered');
      return latest.value as T;
    },
  };
}

/** The texts of the toasts on screen. */
export function toasts(): (string | null)[] {
  return [...document.querySelectorAll('.ant-message-notice')].map((el) => el.textContent);
}
