import { useCallback, useState } from 'react';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';

export interface WolActionText {
  /** The toast after success. */
  success: string;
  /** The toast (and the panel's error line) after a failure; the server's reason follows. */
  failure: string;
  /** Only the toast, not the panel's error line (a dialog's own call). */
  toastOnly?: boolean;
  /** A success clears the panel's error line. */
  clearsError?: boolean;
}

export interface WolActions {
  /** The last failure, shown above the device list until closed. */
  error: string | null;
  clearError(): void;
  /** Shows a failure in the panel only (the list that could not be read). */
  showError(text: string, err: unknown): void;
  /** Runs one call with its toasts; resolves true when it succeeded (it never rejects). */
  run(work: () => Promise<unknown>, text: WolActionText): Promise<boolean>;
}

/** The shared action pattern of the wake-on-LAN panel's sections (one instance per panel). */
export function useWolAction(): WolActions {
  const message = useMessage();
  const [error, setError] = useState<string | null>(null);
  // Stable: the panel's first read reports through it from an effect.
  const showError = useCallback(
    (text: string, err: unknown) => setError(withDetail(text, err)),
    [],
  );

  const run = async (work: () => Promise<unknown>, text: WolActionText) => {
    try {
      await work();
      if (text.clearsError) setError(null);
      void message.success(text.success);
      return true;
    } catch (err) {
      const full = withDetail(text.failure, err);
      if (!text.toastOnly) setError(full);
      void message.error(full);
      return false;
    }
  };

  return {
    error,
    clearError: () => setError(null),
    showError,
    run,
  };
}
