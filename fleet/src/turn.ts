/**
 * TURN REST credentials for coturn's `use-auth-secret` (docs/cloud.md): the username is
 * `<expiry unix seconds>:<name>`, the password base64(HMAC-SHA1(secret, username)). coturn
 * recomputes the password from its `static-auth-secret` and refuses a username whose expiry has
 * passed, so nothing is stored and a leaked pair dies with its `ttl`.
 */
import { createHmac } from 'node:crypto';
import type { FleetTurn } from '@kvm/protocol';
import type { FleetConfig } from './context';

/** Short-lived credentials for `name` (a device id), or null when the fleet has no TURN. */
export function turnCredentials(
  turn: FleetConfig['turn'],
  name: string,
  nowMs: number = Date.now(),
): FleetTurn | null {
  if (!turn || turn.uris.length === 0) return null;
  const ttl = Math.max(1, Math.floor(turn.ttl_s));
  const expiry = Math.floor(nowMs / 1000) + ttl;
  // coturn splits the username at its first ':' (rest-api-separator): keep the name free of it.
  const username = `${expiry}:${name.replace(/:/g, '_')}`;
  const password = createHmac('sha1', turn.secret).update(username).digest('base64');
  return { uris: [...turn.uris], username, password, ttl };
}

/** When to hand out fresh credentials: at three quarters of their life (at least 1 s). */
export function turnRenewMs(turn: FleetTurn): number {
  return Math.max(1000, Math.floor(turn.ttl * 750));
}
