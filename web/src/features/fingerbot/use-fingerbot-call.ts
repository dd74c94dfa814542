import { useState } from 'react';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';

export interface FingerbotCallText {
  /** The toast after success; none when absent. */
  success?: string;
  /** The toast after a failure; the server's reason follows. */
  failure: string;
}

export interface FingerbotCall {
  /** The call runs. */
  busy: boolean;
  /** Runs the call with its toasts; resolves true when it succeeded (it never rejects). */
  run(work: () => Promise<unknown>, text: FingerbotCallText): Promise<boolean>;
}

/** The shared action pattern of the fingerbot panel's sections: one instance per kind of call. */
export function useFingerbotCall(): FingerbotCall {
  const message = useMessage();
  const [busy, setBusy] = useState(false);

  const run = async (work: () => Promise<unknown>, text: FingerbotCallText) => {
    setBusy(true);
    try {
      await work();
      if (text.success) void message.success(text.success);
      return true;
    } catch (err) {
      void message.error(withDetail(text.failure, err));
      return false;
    } finally {
      setBusy(false);
    }
  };

  return { busy, run };
}
