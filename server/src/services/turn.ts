/**
 * ICE servers for WebRTC: `/api/turn/get_turn` and the `turn` event (wire-protocol 3.3, 5.11).
 * A TURN file in GL's format wins; else the configured STUN URL (SPEC 7's public default on a
 * real device); else nothing (offline, tests).
 */
import { readFile } from 'node:fs/promises';
import type { TurnState } from '@kvm/protocol';
import type { AppConfig } from '../config';
import type { StateProvider } from '../ws/state-registry';

export async function loadTurn(config: AppConfig): Promise<TurnState> {
  const base: TurnState = {
    username: '',
    password: '',
    ttl: 86_400,
    uris: config.webrtc.stun_url ? [config.webrtc.stun_url] : [],
  };
  if (!config.webrtc.turn_file) return base;
  try {
    const raw = JSON.parse(
      await readFile(config.webrtc.turn_file, 'utf8'),
    ) as Partial<TurnState> & { uris?: unknown };
    // GL normalises a dict of uris to a list
    const uris = Array.isArray(raw.uris)
      ? raw.uris
      : raw.uris && typeof raw.uris === 'object'
        ? Object.values(raw.uris)
        : [];
    return {
      username: typeof raw.username === 'string' ? raw.username : '',
      password: typeof raw.password === 'string' ? raw.password : '',
      ttl: typeof raw.ttl === 'number' ? raw.ttl : 86_400,
      uris: [
        ...uris.filter((u): u is string => typeof u === 'string' && /^(stuns?|turns?):/.test(u)),
        ...base.uris,
      ],
    };
  } catch {
    return base;
  }
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

export function turnProvider(get: () => TurnState): StateProvider {
  return {
    name: 'turn',
    snapshot: () => [{ event_type: 'turn', event: get() }],
    subscribe: () => () => undefined,
  };
}
