/**
 * The fleet's API client (protocol/src/fleet.ts, docs/cloud.md): JSON under FLEET_API with the
 * session cookie, unwrapped from the kvmd envelope. A refusal is the console's ApiError (status,
 * error, error_msg and the envelope's other fields in `details`: `fields`, `totp_required`...);
 * no answer is a NetworkError. Every state-changing call is a JSON request from this origin
 * (the fleet checks Origin).
 */
import { FLEET_API } from '@kvm/protocol/cloud';
import { ApiError, NetworkError } from '../../lib/api';

export { ApiError, NetworkError };

export type FleetQuery = Readonly<Record<string, string | number | boolean | null | undefined>>;

export function fleetUrl(path: string, query?: FleetQuery): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== null && v !== undefined && v !== '') params.append(k, String(v));
  }
  const search = params.toString();
  return `${FLEET_API}/${path.replace(/^\//, '')}${search ? `?${search}` : ''}`;
}

export async function fleetCall<T>(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT',
  path: string,
  body?: unknown,
  query?: FleetQuery,
): Promise<T> {
  const init: RequestInit = {
    method,
    credentials: 'same-origin',
    headers: { accept: 'application/json' },
  };
  if (body !== undefined) {
    init.headers = { accept: 'application/json', 'content-type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  let r: Response;
  try {
    r = await fetch(fleetUrl(path, query), init);
  } catch (e) {
    throw new NetworkError('network', e);
  }
  let j: { ok?: boolean; result?: unknown } | null = null;
  try {
    j = (await r.json()) as { ok?: boolean; result?: unknown };
  } catch {
    j = null;
  }
  if (r.ok && j?.ok) return j.result as T;
  throw new ApiError(r.status, (j?.result ?? {}) as Record<string, string>);
}

export const api = {
  get: <T>(path: string, query?: FleetQuery) => fleetCall<T>('GET', path, undefined, query),
  post: <T>(path: string, body: unknown = {}) => fleetCall<T>('POST', path, body),
  patch: <T>(path: string, body: unknown) => fleetCall<T>('PATCH', path, body),
  del: <T>(path: string) => fleetCall<T>('DELETE', path),
};

/** The message to show for a failed call. */
export function messageOf(e: unknown): string {
  if (e instanceof ApiError) return e.error_msg || e.message;
  return e instanceof Error ? e.message : String(e);
}

/** A list answer: the array itself or `{<key>: array}` (both shapes appear in the contract). */
export function asList<T>(answer: unknown, key: string): T[] {
  if (Array.isArray(answer)) return answer as T[];
  const inner = (answer as Record<string, unknown> | null)?.[key];
  return Array.isArray(inner) ? (inner as T[]) : [];
}
