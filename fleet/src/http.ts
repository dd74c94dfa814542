/** Small helpers the fleet's routes share. */
import type { FastifyRequest } from 'fastify';
import { clientIp } from '../../server/src/http/client-ip';
import type { FleetContext, FleetUser } from './context';
import { AdminRequiredError, NotSignedInError, ValidatorError } from './errors';

/** The kvmd envelope of a success. */
export function ok<T>(result: T): { ok: true; result: T } {
  return { ok: true, result };
}

/** The JSON body as an object (400 for anything else: an array, a string, nothing). */
export function bodyOf(req: FastifyRequest): Record<string, unknown> {
  const b = req.body;
  if (typeof b !== 'object' || b === null || Array.isArray(b)) {
    throw new ValidatorError('The body must be a JSON object');
  }
  return b as Record<string, unknown>;
}

/** A string field of at most `max` characters ('' when absent; 400 when not a string). */
export function str(b: Record<string, unknown>, key: string, max = 256): string {
  const v = b[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new ValidatorError(`${key} must be a string`);
  if (v.length > max) throw new ValidatorError(`${key} is longer than ${max} characters`);
  return v;
}

/**
 * The query string's one-valued parameters (`?q=a&q=b` is 400, not an array reaching SQL):
 * `keys` each a string of at most `max` characters, or undefined when absent.
 */
export function queryOf<K extends string>(
  req: FastifyRequest,
  keys: readonly K[],
  max = 1024,
): Partial<Record<K, string>> {
  const q = (req.query ?? {}) as Record<string, unknown>;
  const out: Partial<Record<K, string>> = {};
  for (const k of keys) {
    const v = q[k];
    if (v === undefined) continue;
    if (typeof v !== 'string') throw new ValidatorError(`${k} must be given once`);
    if (v.length > max) throw new ValidatorError(`${k} is longer than ${max} characters`);
    out[k] = v;
  }
  return out;
}

/** The address rate limits count by (X-Real-IP / X-Forwarded-For only with trustProxy). */
export function ipOf(req: FastifyRequest, ctx: FleetContext): string {
  return clientIp(req, ctx.config.trustProxy === true);
}

/** The signed-in user, or 401. */
export async function userOrThrow(req: FastifyRequest, ctx: FleetContext): Promise<FleetUser> {
  const user = await ctx.userOf(req);
  if (!user) throw new NotSignedInError();
  return user;
}

/** The signed-in user if an admin; 401 without a session, 403 for a user. */
export async function adminOrThrow(req: FastifyRequest, ctx: FleetContext): Promise<FleetUser> {
  const user = await userOrThrow(req, ctx);
  if (user.role !== 'admin') throw new AdminRequiredError();
  return user;
}

/**
 * The Host's origin is the only one allowed to change state, or to open a WebSocket, with a
 * browser's cookie (a cross-site page's socket would carry it: CSWSH).
 */
export function sameOrigin(origin: string, host: string | undefined): boolean {
  if (!host) return false;
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}
