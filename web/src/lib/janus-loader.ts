/**
 * Loads janus.js (the official one, unmodified) and webrtc-adapter on first use: their own
 * chunk, never fetched by /login or by a console that shows direct H.264.
 */
import type { JanusRuntime, JanusSessionLike, JanusSessionOptions } from './janus-types';

/** What janus.js's default export is (janus.d.ts does not type it this way). */
interface JanusStatic {
  new (options: JanusSessionOptions): JanusSessionLike;
  init(options: { debug: boolean | 'all'; dependencies: unknown; callback: () => void }): void;
  useDefaultDependencies(deps: { adapter: unknown }): unknown;
  isWebrtcSupported(): boolean;
}

let runtimeLoad: Promise<JanusRuntime> | null = null;

/**
 * Loads janus.js and webrtc-adapter (their own chunk, never on /login) and runs Janus.init
 * once per page. A failed load (offline) is forgotten, so the next attempt loads again.
 */
export function loadJanusRuntime(): Promise<JanusRuntime> {
  runtimeLoad ??= (async () => {
    const [janusModule, adapterModule] = await Promise.all([
      import('janus-gateway'),
      import('webrtc-adapter'),
    ]);
    const Janus = janusModule.default as unknown as JanusStatic;
    await new Promise<void>((resolve) => {
      Janus.init({
        // Off in production: janus.js logs every message at 'all'.
        debug: import.meta.env.DEV ? 'all' : false,
        // janus.js reads the adapter from a global unless it is handed over here.
        dependencies: Janus.useDefaultDependencies({ adapter: adapterModule.default }),
        callback: resolve,
      });
    });
    return {
      create: (options) => new Janus(options),
      webrtcSupported: Janus.isWebrtcSupported(),
    };
  })();
  runtimeLoad.catch(() => {
    runtimeLoad = null;
  });
  return runtimeLoad;
}
