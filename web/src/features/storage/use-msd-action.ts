import { useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import { loadMsd } from './msd-store';
import { TRANSFER_FAILURE_TEXT, TransferError } from './upload';

export interface MsdActionText {
  /** Shown in the panel and as a toast when the action fails; the server's reason follows. */
  failure: string;
  /** SPEC 8 mount failure: the toast keeps the bare SPEC text, the panel shows the reason. */
  detailInToast?: boolean;
  /** Toast after success; none when absent. */
  success?: string;
}

export interface MsdActions {
  /** The running action's name (`mount:debian.iso`, `format`…), null when none runs. */
  busy: string | null;
  /** The last failure, shown under the panel until the next success or closed. */
  error: string | null;
  clearError(): void;
  /** Shows a failure that did not come from `run` (a refused upload, a bad URL). */
  fail(text: string, err?: unknown): void;
  /** An upload's or download's end: a cancel is news, anything else a failure. */
  failTransfer(err: unknown): void;
  /**
   * Runs one drive action: busy meanwhile, the toast and panel error on failure, the success
   * toast, then the state reloaded either way. A second call while one runs does nothing (the
   * buttons are disabled too, but a fast double click lands before the re-render).
   * Resolves true when the work succeeded.
   */
  run(name: string, work: () => Promise<unknown>, text: MsdActionText): Promise<boolean>;
}

/** The shared action pattern of the storage panel's sections (one instance per panel). */
export function useMsdAction(): MsdActions {
  const { t } = useTranslation();
  const message = useMessage();
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const running = useRef(false);

  const fail = (text: string, err?: unknown) => {
    const full = withDetail(text, err);
    setError(full);
    void message.error(full);
  };

  const failTransfer = (err: unknown) => {
    if (!(err instanceof TransferError)) {
      fail(t('storage.upload.failed'), err);
      return;
    }
    const text = t(TRANSFER_FAILURE_TEXT[err.reason]);
    if (err.reason === 'cancelled') {
      void message.info(text);
    } else if (err.reason === 'failed') {
      fail(text, err);
    } else {
      fail(text);
    }
  };

  const run = async (name: string, work: () => Promise<unknown>, text: MsdActionText) => {
    if (running.current) return false;
    running.current = true;
    setBusy(name);
    let ok = false;
    try {
      await work();
      ok = true;
    } catch (err) {
      const full = withDetail(text.failure, err);
      setError(full);
      void message.error(text.detailInToast === false ? text.failure : full);
    } finally {
      running.current = false;
      setBusy(null);
      void loadMsd();
    }
    if (ok) {
      setError(null);
      if (text.success) void message.success(text.success);
    }
    return ok;
  };

  return { busy, error, clearError: () => setError(null), fail, failTransfer, run };
}
