/**
 * The microphone enable flow of SPEC 4: (confirmed by the user) set the param, restart, wait for
 * the reconnection; the caller shows the success toast. micStatus() says 'enabling' meanwhile.
 */
import { NetworkError } from '../../lib/api';
import { useAudio } from './audio-store';

export interface MicEnableDeps {
  /** POST /api/system/set_param?enable_mic=1 */
  setParam: () => Promise<unknown>;
  /** GET /api/upgrade/reboot */
  reboot: () => Promise<unknown>;
  /** GET /api/audio's mic.enabled; rejects while the device is away. */
  micEnabled: () => Promise<boolean>;
  /** Resolves when the connection was seen to drop (the restart began). */
  wentAway: Promise<void>;
  /** Resolves when the console's connection is back (the heartbeat's reconnection). */
  reconnected?: () => Promise<void>;
  pollMs?: number;
  waitMs?: number;
}

export class MicEnableError extends Error {
  override readonly name = 'MicEnableError';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * SPEC 4: set the param, restart, wait for reconnection. Done when the device, having gone
 * away, answers again with the microphone enabled (it takes enable_mic at its start, as GL).
 * The caller confirmed first and shows the toast after.
 */
export async function enableMicrophone(flow: MicEnableDeps): Promise<void> {
  if (useAudio.getState().enabling) throw new MicEnableError('already enabling');
  useAudio.setState({ enabling: true });
  try {
    await flow.setParam();
    try {
      await flow.reboot();
    } catch (err) {
      // The restart may take the server down before its answer is out.
      if (!(err instanceof NetworkError)) throw err;
    }
    let away = false;
    void flow.wentAway.then(() => {
      away = true;
    });
    const until = Date.now() + (flow.waitMs ?? 180_000);
    for (;;) {
      await sleep(flow.pollMs ?? 1000);
      const enabled = await flow.micEnabled().then(
        (value) => value,
        () => {
          away = true;
          return null;
        },
      );
      if (enabled === true && away) {
        // SPEC 4: the toast comes once the console is connected again (bounded by the wait).
        const left = Math.max(0, until - Date.now());
        await Promise.race([flow.reconnected?.() ?? Promise.resolve(), sleep(left)]);
        return;
      }
      if (Date.now() > until) {
        // A restart too quick to be seen: the device's answer is what counts.
        if (enabled === true) return;
        throw new MicEnableError('the device did not come back with the microphone enabled');
      }
    }
  } finally {
    useAudio.setState({ enabling: false });
  }
}
