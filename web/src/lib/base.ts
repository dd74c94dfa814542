/**
 * The path the console runs under (docs/console.md "Running under a fleet path"). Served by the
 * device itself the base is '' and nothing changes. Reached through a fleet server
 * (docs/cloud.md) the page is `https://<fleet>/d/<deviceId>/`: the fleet inserts
 * `<meta name="kvm-base" content="/d/<deviceId>">` into the HTML, and every API call, WebSocket,
 * router path, full-page navigation and stored browser key gets that prefix, so two devices
 * open in two tabs of one fleet origin share nothing.
 */

export const BASE_META_NAME = 'kvm-base';

/** Path segments only: no empty, '.' or '..' segment, no query, no trailing slash. */
const SEGMENT = /^[A-Za-z0-9._~-]+$/;

/** The meta's content as a base: '' when absent or not a plain absolute path. */
export function parseBase(content: string | null | undefined): string {
  if (!content || !content.startsWith('/')) return '';
  const trimmed = content.replace(/\/+$/, '');
  if (trimmed === '') return '';
  const segments = trimmed.slice(1).split('/');
  const plain = segments.every((s) => SEGMENT.test(s) && s !== '.' && s !== '..');
  return plain ? trimmed : '';
}

/** Read from the document on each call: cheap, and a test may change the meta. */
export function getBase(
  doc: Pick<Document, 'querySelector'> | undefined = globalThis.document,
): string {
  const meta = doc?.querySelector<HTMLMetaElement>(`meta[name="${BASE_META_NAME}"]`);
  return parseBase(meta?.getAttribute('content'));
}

/** '/api/info' → '/d/abc/api/info' under a base; unchanged without one. */
export function withBase(path: string, base: string = getBase()): string {
  const absolute = path.startsWith('/') ? path : `/${path}`;
  return `${base}${absolute}`;
}

/** The page's path as the console's routes see it: '/d/abc/upgrading' → '/upgrading'. */
export function stripBase(pathname: string, base: string = getBase()): string {
  if (!base) return pathname;
  if (pathname === base) return '/';
  return pathname.startsWith(`${base}/`) ? pathname.slice(base.length) : pathname;
}

/** ws:// or wss:// after the page's protocol, on the page's host, under the base. */
export function socketUrl(
  location: { protocol: string; host: string },
  path: string,
  base: string = getBase(),
): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}${withBase(path, base)}`;
}

/** A browser storage key of this device: '/d/abc/auth_token' under a base; unchanged without. */
export function storageKey(key: string, base: string = getBase()): string {
  return base ? `${base}/${key}` : key;
}

/** A full-page load of a console path ('/', '/upgrading'), under the base. */
export function assignPath(path: string): void {
  window.location.assign(withBase(path));
}

/** For tests: puts the fleet's meta in the document (null removes it). */
export function setBaseMetaForTests(content: string | null): void {
  document.head.querySelector(`meta[name="${BASE_META_NAME}"]`)?.remove();
  if (content === null) return;
  const meta = document.createElement('meta');
  meta.setAttribute('name', BASE_META_NAME);
  meta.setAttribute('content', content);
  document.head.appendChild(meta);
}
