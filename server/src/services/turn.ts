/**
 * ICE servers for WebRTC: `/api/turn/get_turn` and the `turn` event (wire-protocol 3.3, 5.11).
 * A TURN file in GL's format wins; else the configured STUN URL (SPEC 7's public default on a
 * real device); else nothing (offline, tests).
 */
import { readFile } from 'node:fs/promises';
import type { TurnState } from '@kvm/protocol';
import type { AppConfig } from '../config';
import { SILENT_LOGGER, type Logger } from '../log';
import type { StateProvider } from '../ws/state-registry';

/**
 * A TURN file that cannot be read or used is logged (at warn: the console still works through
 * the STUN URL, only relayed connections are lost) instead of meaning "no TURN" silently.
 */
export async function loadTurn(config: AppConfig, log: Logger = SILENT_LOGGER): Promise<TurnState> {
  const base: TurnState = {
    username: '',
    password: '',
    ttl: 86_400,
    uris: config.webrtc.stun_url ? [config.webrtc.stun_url] : [],
  };
  const path = config.webrtc.turn_file;
  if (!path) return base;
  const unusable = (reason: string, extra: Record<string, unknown> = {}): TurnState => {
    log.warn({ file: path, reason, ...extra }, 'TURN file unusable: no TURN relay offered');
    return base;
  };
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return unusable(code === 'ENOENT' ? 'missing' : 'unreadable', { code });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return unusable('not valid JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return unusable('not a JSON object');
  }
  const raw = parsed as Partial<TurnState> & { uris?: unknown };
  // GL normalises a dict of uris to a list
  const uris = Array.isArray(raw.uris)
    ? raw.uris
    : raw.uris && typeof raw.uris === 'object'
      ? Object.values(raw.uris)
      : [];
  const usable = uris.filter(
    (u): u is string => typeof u === 'string' && /^(stuns?|turns?):/.test(u),
  );
  if (usable.length === 0) return unusable('no stun:/turn: URI in uris');
  if (usable.length < uris.length) {
    log.warn({ file: path, ignored: uris.length - usable.length }, 'TURN file: some uris ignored');
  }
  return {
    username: typeof raw.username === 'string' ? raw.username : '',
    password: typeof raw.password === 'string' ? raw.password : '',
    ttl: typeof raw.ttl === 'number' ? raw.ttl : 86_400,
    uris: [...usable, ...base.uris],
  };
}

/** RTCIceServer list for the server's own peer connections. */
export function iceServersOf(
  turn: TurnState,
): Array<{ urls: string; username?: string; credential?: string }> {
  return turn.uris.map((urls) =>
    urls.startsWith('turn')
      ? { urls, username: turn.username, credential: turn.password }
      : { urls },
  );
}

/** The ICE servers the device was started with: `/api/turn/get_turn` and the `turn` event. */
export class TurnService {
  private constructor(private readonly turn: TurnState) {}

  static async load(config: AppConfig, log: Logger = SILENT_LOGGER): Promise<TurnService> {
    return new TurnService(await loadTurn(config, log));
  }

  state(): TurnState {
    return this.turn;
  }

  /** RTCIceServer list of {@link state}. */
  iceServers(): ReturnType<typeof iceServersOf> {
    return iceServersOf(this.turn);
  }

  /** The `turn` event of `/api/ws`: read once at start, so it never changes. */
  provider(): StateProvider {
    return {
      name: 'turn',
      snapshot: () => [{ event_type: 'turn', event: this.turn }],
      subscribe: () => () => undefined,
    };
  }
}
