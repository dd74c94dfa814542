/**
 * ICE servers for WebRTC: `/api/turn/get_turn` and the `turn` event (wire-protocol 3.3, 5.11).
 * A TURN file in GL's format wins; else the configured STUN URL (SPEC 7's public default on a
 * real device); else nothing (offline, tests).
 */
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs/promises';
import type { FleetTurn, TurnState } from '@kvm/protocol';
import type { AppConfig } from '../config';
import { SILENT_LOGGER, type Logger } from '../log';
import { watchedStateProvider, type StateProvider } from '../ws/state-registry';

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

/**
 * The device's ICE servers (`/api/turn/get_turn` and the `turn` event): those it was started
 * with, plus the cloud fleet's short-lived TURN REST credentials while the device is bound and
 * its agent online (docs/cloud.md). The fleet's relay then comes first and its credentials are
 * the state's (one username/password per state: a TURN file's own `turn:` URIs give way, its
 * STUN URIs stay). Every change is sent again as the `turn` event.
 */
export class TurnService extends EventEmitter<{ state: [TurnState] }> {
  private fleet: FleetTurn | null = null;
  private current: TurnState;

  private constructor(private readonly base: TurnState) {
    super();
    this.current = base;
  }

  static async load(config: AppConfig, log: Logger = SILENT_LOGGER): Promise<TurnService> {
    return new TurnService(await loadTurn(config, log));
  }

  state(): TurnState {
    return this.current;
  }

  getState(): TurnState {
    return this.current;
  }

  /** The fleet's TURN credentials (null: none, offline or unbound); emits `state` on change. */
  setFleet(turn: FleetTurn | null): void {
    if (JSON.stringify(turn) === JSON.stringify(this.fleet)) return;
    this.fleet = turn;
    this.current = turn
      ? {
          username: turn.username,
          password: turn.password,
          ttl: turn.ttl,
          uris: [...turn.uris, ...this.base.uris.filter((u) => !u.startsWith('turn'))],
        }
      : this.base;
    this.emit('state', this.current);
  }

  /** RTCIceServer list of {@link state}. */
  iceServers(): ReturnType<typeof iceServersOf> {
    return iceServersOf(this.current);
  }

  /** The `turn` event of `/api/ws`, sent again when the fleet's credentials come or go. */
  provider(): StateProvider {
    return watchedStateProvider('turn', this);
  }
}
