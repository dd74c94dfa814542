/**
 * The device's console served under `/d/<id>/` (docs/cloud.md "Tunnel"): its index.html names
 * its assets by absolute path (`/assets/...`), so the fleet prefixes those, and tells the
 * console its base with `<meta name="kvm-base">` (web/src/lib/base.ts reads it for its API and
 * socket URLs). Headers toward either side are filtered here too.
 */
import { HOP_BY_HOP } from '../agents/stream';

/**
 * The largest HTML document the fleet rewrites (the console's index.html is a few KiB); held
 * whole while rewritten, so a device cannot make the fleet hold more per request.
 */
export const HTML_REWRITE_MAX = 1 << 20;

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

/** Rewrites `src="/x"` and `href="/x"` (not `//host`) to `<base>/x`, and adds the kvm-base meta. */
export function rewriteHtml(html: string, base: string): string {
  const out = html.replace(
    /(\s(?:src|href)\s*=\s*)(["']?)\/(?!\/)/gi,
    (_m, attr: string, quote: string) => `${attr}${quote}${base}/`,
  );
  const meta = `<meta name="kvm-base" content="${escapeAttr(base)}">`;
  const head = /<head(?:\s[^>]*)?>/i.exec(out);
  if (head)
    return (
      out.slice(0, head.index + head[0].length) + meta + out.slice(head.index + head[0].length)
    );
  return meta + out;
}

/**
 * Headers never sent toward the device: hop-by-hop, and the browser's fleet credentials.
 * `transfer-encoding` stays: it tells the device a body of unknown length follows (the device
 * drops it from its own request; without it or a content-length it reads no body).
 */
const NOT_TO_DEVICE = new Set([
  ...[...HOP_BY_HOP].filter((h) => h !== 'transfer-encoding'),
  'cookie',
  'authorization',
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
  'sec-websocket-accept',
]);

/** Headers never sent toward the browser: hop-by-hop, and the device's cookies. */
const NOT_TO_BROWSER = new Set([...HOP_BY_HOP, 'set-cookie', 'set-cookie2']);

/** The browser's request headers as the device gets them (multi-valued joined). */
export function headersToDevice(
  raw: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  const connectionTokens = new Set(
    String(raw.connection ?? '')
      .split(',')
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
  for (const [k, v] of Object.entries(raw)) {
    const key = k.toLowerCase();
    if (v === undefined || NOT_TO_DEVICE.has(key) || connectionTokens.has(key)) continue;
    out[key] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** The device's response headers as the browser gets them; `Location: /x` stays under base. */
export function headersToBrowser(
  headers: Record<string, string>,
  base: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    const key = k.toLowerCase();
    if (NOT_TO_BROWSER.has(key)) continue;
    out[key] = key === 'location' && v.startsWith('/') && !v.startsWith('//') ? `${base}${v}` : v;
  }
  return out;
}
