/**
 * Who may show the console in a frame (issue 21, item 4). SPEC lets the console run inside a
 * host application's iframe, so the pages allowed to embed it are configuration
 * (`server.frame_ancestors`), by default the device's own origin only. Every answer carries
 * them as CSP `frame-ancestors`, and, where the list has an X-Frame-Options equivalent (the
 * device's own origin only, or nobody), that header too for browsers without CSP level 2.
 */

/** The default: the device's own origin (the console framing itself, e.g. its own dialogs). */
export const DEFAULT_FRAME_ANCESTORS: readonly string[] = ["'self'"];

/** `scheme://host[:port]`, the host a DNS name (optionally `*.`-prefixed), IPv4 or [IPv6]. */
const ORIGIN_RE =
  /^https?:\/\/(?:\*\.)?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*(?::\d{1,5})?$|^https?:\/\/\[[0-9a-f:.]+\](?::\d{1,5})?$/i;

/**
 * Why one entry cannot be a frame ancestor, or null when it can: `'self'`, `'none'` or an
 * origin `https://app.example[:port]` (`http://` too; a `*.` wildcard for subdomains). A bare
 * `*` or scheme (`https:`) would let any page frame the console, so they are refused: name the
 * host applications.
 */
export function frameAncestorIssue(entry: string): string | null {
  if (entry === "'self'" || entry === "'none'") return null;
  if (entry === 'self' || entry === 'none') return `write it quoted, as CSP does: "'${entry}'"`;
  if (/^\*$|^[a-z][a-z0-9+.-]*:$/i.test(entry)) {
    return `${JSON.stringify(entry)} lets any page frame the console; name the origins allowed`;
  }
  if (!ORIGIN_RE.test(entry)) {
    return `expected 'self', 'none' or an origin like https://app.example[:port], got ${JSON.stringify(entry.slice(0, 100))}`;
  }
  const port = /:(\d+)$/.exec(entry)?.[1];
  if (port !== undefined && Number(port) > 65535) return `port ${port} is out of range`;
  return null;
}

/** A whole list's issue: each entry, and `'none'` only alone. */
export function frameAncestorsIssue(list: readonly string[]): string | null {
  for (const entry of list) {
    const issue = frameAncestorIssue(entry);
    if (issue) return issue;
  }
  if (list.includes("'none'") && list.length > 1) return "'none' cannot be combined with others";
  return null;
}

/** The headers of a (valid) list. */
export function frameHeaders(list: readonly string[]): Array<[string, string]> {
  const headers: Array<[string, string]> = [
    ['content-security-policy', `frame-ancestors ${list.join(' ')}`],
  ];
  // X-Frame-Options has no list: only these two have an equivalent (with others, a browser that
  // knows CSP ignores it anyway, and one that does not would refuse the allowed embedders).
  if (list.length === 1 && list[0] === "'self'") headers.push(['x-frame-options', 'SAMEORIGIN']);
  if (list.length === 1 && list[0] === "'none'") headers.push(['x-frame-options', 'DENY']);
  return headers;
}

/** The onRequest hook that puts them on every answer (pages, files, errors alike). */
export function frameAncestorsHook(
  list: readonly string[],
): (
  request: unknown,
  reply: { header(name: string, value: string): unknown },
  done: () => void,
) => void {
  const headers = frameHeaders(list);
  return (_request, reply, done) => {
    for (const [name, value] of headers) reply.header(name, value);
    done();
  };
}
