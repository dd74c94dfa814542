/** One change at a time for the settings groups' stores (the `busy` flag of their state). */
import type { StoreApi } from 'zustand/vanilla';

/**
 * Runs `work` with `busy` set, and clears it however `work` ends. A call while another runs is
 * refused with `refused()` (the buttons are disabled too, but a fast double click lands before
 * the re-render).
 */
export async function whileBusy<S extends { busy: boolean }, T>(
  store: StoreApi<S>,
  refused: () => Error,
  work: () => Promise<T>,
): Promise<T> {
  if (store.getState().busy) throw refused();
  store.setState({ busy: true } as Partial<S>);
  try {
    return await work();
  } finally {
    store.setState({ busy: false } as Partial<S>);
  }
}
