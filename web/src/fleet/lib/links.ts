/**
 * Where the console goes from a link (docs/cloud.md "The fleet console (React)"): `?next=`
 * after signing in, a device's bind link, part 1's hash addresses.
 */

/**
 * Where to go after signing in: `?next=` when it is a console path of this fleet (`/d/<id>/...`,
 * where the tunnel sent a browser without a session), never another origin or page (no open
 * redirect); else null.
 */
export function safeNext(search: string): string | null {
  const next = new URLSearchParams(search).get('next');
  if (!next || !/^\/d\/[A-Za-z0-9_-]{1,64}(\/[^\\]*)?$/.test(next) || next.indexOf('//') >= 0) {
    return null;
  }
  return next;
}

/**
 * A device's bind link (`/?code=<8 digits>#devices`, the device's `get_bind_link`): the code to
 * put in "Add device" (kept through signing in), or null.
 */
export function bindCodeOf(search: string): string | null {
  const code = new URLSearchParams(search).get('code');
  return code && /^\d{8}$/.test(code) ? code : null;
}

/**
 * Part 1's addresses were `/#signin`, `/#signup`, `/#devices` (devices' bind links still are):
 * the route they mean, or null. The query stays with the caller.
 */
export function routeOfHash(hash: string): string | null {
  switch (hash) {
    case '#signin':
      return '/signin';
    case '#signup':
      return '/signup';
    case '#devices':
      return '/devices';
    default:
      return null;
  }
}
