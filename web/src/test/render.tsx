/** Minimal React rendering for tests (react-dom + act, no extra library). */
import { act, type ReactNode } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { NotifyProvider } from '../components/notify';
import { initI18n } from '../i18n';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

export interface Rendered {
  container: HTMLElement;
  byTestId(id: string): HTMLElement | null;
  unmount(): void;
}

export async function render(node: ReactNode): Promise<Rendered> {
  initI18n('en');
  const container = document.createElement('div');
  document.body.appendChild(container);
  let root: Root | undefined;
  await act(async () => {
    root = createRoot(container);
    root.render(node);
  });
  return {
    container,
    byTestId: (id) => document.querySelector<HTMLElement>(`[data-testid="${id}"]`),
    unmount: () => {
      act(() => root?.unmount());
      container.remove();
    },
  };
}

/** Lets pending promises and the effects they trigger settle. */
export async function flush(times = 5): Promise<void> {
  for (let i = 0; i < times; i += 1) {
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 0));
    });
  }
}

/** A panel as the console shows it (inside the toasts' provider), once its first reads settle. */
export async function renderPanel(node: ReactNode): Promise<Rendered> {
  const view = await render(<NotifyProvider>{node}</NotifyProvider>);
  await flush();
  return view;
}
