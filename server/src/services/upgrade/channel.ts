/**
 * The upgrade channel (GL's layout, wire-protocol.md 5.6 and 5.13): `list-sha256.txt` names the
 * current release (`<version> <file> <sha256>` on its first line) and `metadata_<version>` its
 * notes. Every request is bounded in time and in size.
 */

/** Channel lookups and the download's answer wait this long (GL's requests use 5 s too). */
export const CHANNEL_TIMEOUT_MS = 5000;
/** list-sha256.txt and metadata are small: bound what a channel can make us read. */
const CHANNEL_TEXT_MAX = 64 * 1024;

export interface ChannelRelease {
  version: string;
  file: string;
  sha256: string;
  release_note: string;
  release_note_cn: string;
}

/** A channel's base URL with the slash `new URL(file, base)` needs to stay inside it. */
export function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}

/** What the console shows of a failed lookup or transfer. */
export function messageOf(e: unknown): string {
  if (e instanceof Error) {
    if (e.name === 'TimeoutError' || e.name === 'AbortError')
      return 'The channel did not answer in time';
    return e.message;
  }
  return String(e);
}

async function fetchText(url: URL): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(CHANNEL_TIMEOUT_MS) });
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(`${url.pathname.split('/').pop()}: HTTP ${res.status}`);
  }
  const text = await res.text();
  if (text.length > CHANNEL_TEXT_MAX) throw new Error(`${url.pathname}: too large`);
  return text;
}

/** The channel's current release: list-sha256.txt's first line and its metadata file. */
export async function channelRelease(base: string | null, kind: string): Promise<ChannelRelease> {
  if (!base) throw new Error(`No ${kind} channel is configured (upgrade.channel_url)`);
  const list = await fetchText(new URL('list-sha256.txt', withSlash(base)));
  const [version, file, sha256] = (list.split('\n')[0] ?? '').trim().split(/\s+/);
  if (
    !version ||
    !file ||
    !sha256 ||
    !/^[0-9a-f]{64}$/i.test(sha256) ||
    !/^[\w+-][\w.+-]*$/.test(file) ||
    !/^[\w.+-]+$/.test(version)
  ) {
    throw new Error(`The ${kind} channel's list-sha256.txt is malformed`);
  }
  const meta = JSON.parse(await fetchText(new URL(`metadata_${version}`, withSlash(base)))) as {
    version?: { release?: unknown; firmware_type?: unknown };
    release_note?: unknown;
    release_note_cn?: unknown;
  };
  const release = typeof meta.version?.release === 'string' ? meta.version.release : version;
  const type = typeof meta.version?.firmware_type === 'string' ? meta.version.firmware_type : '';
  return {
    // GL: "V<release> <firmware_type>".
    version: `V${release.replace(/^v/i, '')} ${type}`.trim(),
    file,
    sha256: sha256.toLowerCase(),
    release_note: typeof meta.release_note === 'string' ? meta.release_note : '',
    release_note_cn: typeof meta.release_note_cn === 'string' ? meta.release_note_cn : '',
  };
}
