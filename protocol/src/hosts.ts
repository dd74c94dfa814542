/**
 * SPEC 9: "host names counted as official: matched against a list of five domains (list not
 * shown)". Ours are the vendor's published domains whose pages may host the console (its
 * cloud and apps); what being official gates is docs/console.md "Official host names".
 */
export const OFFICIAL_HOST_DOMAINS = [
  'gl-inet.com',
  'gl-inet.cn',
  'glkvm.com',
  'glkvm.cn',
  'goodcloud.xyz',
] as const;

/**
 * Whether `hostname` is one of the domains or below one of them (`www.glkvm.com`), compared
 * case-insensitively and label by label: `evilglkvm.com` and `glkvm.com.example.net` are not.
 */
export function isOfficialHost(hostname: string): boolean {
  const host = hostname.trim().toLowerCase().replace(/\.$/, '');
  return OFFICIAL_HOST_DOMAINS.some((domain) => host === domain || host.endsWith(`.${domain}`));
}

/**
 * Whether a page of `origin` counts as official: an https origin (default port or any) on an
 * official host. Plain http never does: anyone on the path could pose as it.
 */
export function isOfficialOrigin(origin: string): boolean {
  // An origin is `scheme://host[:port]`; nothing else counts (a path, user info, `null`).
  const m = /^https:\/\/([A-Za-z0-9.-]+)(?::\d{1,5})?$/.exec(origin.trim());
  return m !== null && isOfficialHost(m[1]!);
}
