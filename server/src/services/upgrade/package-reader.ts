/**
 * Reads and verifies a release package (scripts/package.mjs; format in docs/upgrade.md): a
 * gzip'd ustar tar of `manifest.json`, `manifest.sig` and `files/<path>`, in that order. One
 * streaming pass: the signature is known before the first file byte, every file is hashed as
 * it goes by, and `extractTo` (the A/B install) writes a file only after its manifest was signed
 * by a trusted key. The first failed check ends the read (issue 21: an unsigned gzip bomb cost
 * 21 s of CPU when it did not). A package installs `package.json`, `server/dist/**` and
 * `web/dist/**` only (INSTALLABLE).
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { finished } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { compareVersions, formatVersion } from '@kvm/protocol';

export interface ManifestFile {
  path: string;
  sha256: string;
  size: number;
}

export interface PackageManifest {
  format: 1;
  version: string;
  model: string;
  min_version: string;
  created: string;
  files: ManifestFile[];
}

export interface VerifyResult {
  signature_valid: boolean;
  firmware_valid: boolean;
  manifest: PackageManifest | null;
  /** Why the package is refused; null when both flags are true. */
  reason: string | null;
  /**
   * Set when the one failed check is that the package is older than the running version (and
   * `allowDowngrade` was not given): the caller asks the admin instead of only refusing.
   */
  downgrade: boolean;
  /** Bytes the reader took from the gzip stream (the work done; the tests bound it). */
  inflated: number;
}

export interface VerifyOptions {
  /** Unpack `files/` here (the A/B install). */
  extractTo?: string;
  /**
   * skip_verify (only when upgrade.allow_skip_verify): an untrusted signature does not stop
   * the reading; every other check still does.
   */
  allowUnsigned?: boolean;
  /** The admin confirmed installing a release older than the running one. */
  allowDowngrade?: boolean;
  /** The whole read stops past this (a package this device cannot verify in time). */
  budgetMs?: number;
  /** The clock the budget is measured on (tests). */
  now?: () => number;
}

/** What a package may install: the release tree and nothing else (docs/security.md). */
export const INSTALLABLE = { files: ['package.json'], folders: ['server/dist/', 'web/dist/'] };

/** A manifest path the install may write: package.json, or a file under server/dist or web/dist. */
export function installablePath(path: string): boolean {
  return (
    safePackagePath(path) &&
    (INSTALLABLE.files.includes(path) || INSTALLABLE.folders.some((d) => path.startsWith(d)))
  );
}

/** Verifying a package may take this long (a 1 GiB package reads in well under a minute). */
export const VERIFY_BUDGET_MS = 5 * 60_000;
/** The most a manifest may declare in all: the largest package, inflated, with room. */
export const UNPACKED_MAX_BYTES = 4 * 1024 * 1024 * 1024;
/** Compressed bytes read at a time: one read inflates at most ~1000 times this. */
const READ_CHUNK = 16 * 1024;

/** The manifest and signature are read into memory: bound them. */
const META_MAX = 4 * 1024 * 1024;
const FILES_MAX = 20_000;

/** Trusted keys from config `upgrade.trusted_keys`: PEM text, or the path of a PEM file. */
export async function loadTrustedKeys(entries: readonly string[]): Promise<KeyObject[]> {
  const keys: KeyObject[] = [];
  for (const entry of entries) {
    const pem = entry.includes('-----BEGIN') ? entry : await readFile(entry, 'utf8');
    // A private key's PEM gives its public half too.
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType !== 'ed25519') {
      throw new Error(`upgrade.trusted_keys: not an ed25519 key: ${entry.slice(0, 40)}`);
    }
    keys.push(key);
  }
  return keys;
}

/** A path inside the package: relative, no `..`, `.` or empty segment, no backslash or NUL. */
export function safePackagePath(path: string): boolean {
  if (path.length === 0 || path.length > 255 || path.startsWith('/')) return false;
  if (/[\\\0]/.test(path)) return false;
  return path.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

function parseManifest(data: Buffer): PackageManifest {
  const m = JSON.parse(data.toString('utf8')) as Partial<PackageManifest>;
  if (m.format !== 1) throw new Error('unknown manifest format');
  for (const k of ['version', 'model', 'min_version', 'created'] as const) {
    if (typeof m[k] !== 'string') throw new Error(`manifest: ${k} missing`);
  }
  if (!Array.isArray(m.files) || m.files.length > FILES_MAX) throw new Error('manifest: files');
  const seen = new Set<string>();
  let declared = 0;
  for (const f of m.files) {
    if (typeof f?.path === 'string' && safePackagePath(f.path) && !installablePath(f.path)) {
      throw new Error(
        `manifest: ${JSON.stringify(f.path)} is outside package.json, server/dist and web/dist`,
      );
    }
    if (
      typeof f?.path !== 'string' ||
      !safePackagePath(f.path) ||
      seen.has(f.path) ||
      typeof f.sha256 !== 'string' ||
      !/^[0-9a-f]{64}$/.test(f.sha256) ||
      !Number.isSafeInteger(f.size) ||
      f.size < 0
    ) {
      throw new Error(`manifest: bad file entry ${JSON.stringify(f?.path ?? null)}`);
    }
    seen.add(f.path);
    declared += f.size;
  }
  if (declared > UNPACKED_MAX_BYTES) throw new Error(`manifest: ${declared} bytes in all`);
  return m as PackageManifest;
}

interface TarHeader {
  path: string;
  size: number;
  type: string;
}

function octal(buf: Buffer, start: number, len: number): number {
  const text = buf
    .subarray(start, start + len)
    .toString('ascii')
    .replace(/[\0 ]+$/, '')
    .trim();
  if (!/^[0-7]*$/.test(text)) throw new Error('bad tar number');
  return text === '' ? 0 : parseInt(text, 8);
}

function cstr(buf: Buffer, start: number, len: number): string {
  const raw = buf.subarray(start, start + len);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? len : end).toString('utf8');
}

/** The header, null at the end-of-archive zero block. */
function parseHeader(h: Buffer): TarHeader | null {
  if (h.every((b) => b === 0)) return null;
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
  if (sum !== octal(h, 148, 8)) throw new Error('tar header checksum');
  if (h.subarray(257, 262).toString('ascii') !== 'ustar') throw new Error('not a ustar archive');
  const name = cstr(h, 0, 100);
  const prefix = cstr(h, 345, 155);
  return {
    path: prefix ? `${prefix}/${name}` : name,
    size: octal(h, 124, 12),
    type: String.fromCharCode(h[156]!),
  };
}

class Refused extends Error {
  constructor(
    message: string,
    readonly downgrade = false,
  ) {
    super(message);
  }
}

/**
 * Verifies `file` (and with `extractTo`, unpacks its `files/` there; the caller gives an empty
 * folder and discards it unless both flags come back true). Never throws for a bad package.
 *
 * It stops at the first failed check, reading no further: the manifest's own checks (model,
 * min_version, not older than this version) and the signature are known before the first file
 * byte, so an unsigned or foreign package costs the inflation of its manifest only. Past that
 * every entry's size must be the manifest's and the stream ends at the archive's end, so what
 * is inflated is bounded by the signed sizes; the whole read by `budgetMs`.
 */
export async function verifyPackage(
  file: string,
  trustedKeys: readonly KeyObject[],
  model: string,
  localVersion: string,
  opts: VerifyOptions = {},
): Promise<VerifyResult> {
  const result: VerifyResult = {
    signature_valid: false,
    firmware_valid: false,
    manifest: null,
    reason: null,
    downgrade: false,
    inflated: 0,
  };
  const now = opts.now ?? (() => performance.now());
  const budgetMs = opts.budgetMs ?? VERIFY_BUDGET_MS;
  const began = now();
  let manifestData: Buffer | null = null;
  let manifestError: Refused | null = null;
  let expected = new Map<string, ManifestFile>();
  const done = new Set<string>();

  let buf: Buffer = Buffer.alloc(0);
  let entry: TarHeader | null = null;
  let remaining = 0;
  let padding = 0;
  let meta: Buffer[] = [];
  let hash: ReturnType<typeof createHash> | null = null;
  let out: WriteStream | null = null;
  let index = 0;
  let ended = false;
  let writeError: Error | null = null;

  /** The manifest's own checks: the first that fails, or null. */
  const manifestProblem = (m: PackageManifest): Refused | null => {
    if (m.model !== model) return new Refused(`the package is for ${m.model}, not ${model}`);
    if (formatVersion(m.version) === null) return new Refused(`bad version ${m.version}`);
    if (compareVersions(m.min_version, localVersion) > 0) {
      return new Refused(
        `the package upgrades from ${m.min_version} or later; this is ${localVersion}`,
      );
    }
    if (!opts.allowDowngrade && compareVersions(m.version, localVersion) < 0) {
      return new Refused(
        `the package (${formatVersion(m.version)}) is older than the running version (${localVersion}); installing it is a downgrade`,
        true,
      );
    }
    return null;
  };

  const startEntry = async (h: TarHeader): Promise<void> => {
    if (h.type !== '0' && h.type !== '\0') throw new Refused(`${h.path}: not a regular file`);
    if (!safePackagePath(h.path)) throw new Refused(`unsafe path ${JSON.stringify(h.path)}`);
    index++;
    if (index === 1 && h.path !== 'manifest.json') throw new Refused('manifest.json must be first');
    if (index === 2 && h.path !== 'manifest.sig') throw new Refused('manifest.sig must be second');
    if (index <= 2) {
      if (h.size > META_MAX) throw new Refused(`${h.path} is too large`);
      meta = [];
      return;
    }
    if (!h.path.startsWith('files/')) throw new Refused(`unexpected entry ${h.path}`);
    const rel = h.path.slice('files/'.length);
    const want = expected.get(rel);
    if (!want) throw new Refused(`${rel} is not in the manifest`);
    if (done.has(rel)) throw new Refused(`${rel} appears twice`);
    if (want.size !== h.size) throw new Refused(`${rel}: size ${h.size}, manifest ${want.size}`);
    hash = createHash('sha256');
    if (opts.extractTo) {
      const dest = join(opts.extractTo, rel);
      await mkdir(dirname(dest), { recursive: true });
      // 'wx': a path the tar already wrote (or anything else there) is never written through.
      const o = createWriteStream(dest, { mode: 0o644, flags: 'wx' });
      // A full disk fails the unpack (below); a stream destroyed mid-write must not throw.
      o.on('error', (err) => (writeError ??= err));
      out = o;
    }
  };

  const endEntry = async (): Promise<void> => {
    const h = entry!;
    if (index === 1) {
      manifestData = Buffer.concat(meta);
      try {
        result.manifest = parseManifest(manifestData);
        expected = new Map(result.manifest.files.map((f) => [f.path, f]));
      } catch (e) {
        // Said after the signature: a signed manifest naming a path outside the release tree
        // is a trusted package that is refused, an unsigned one is refused for its signature.
        manifestError = new Refused((e as Error).message);
      }
    } else if (index === 2) {
      const sig = Buffer.from(Buffer.concat(meta).toString('ascii').trim(), 'base64');
      result.signature_valid = trustedKeys.some((k) => {
        try {
          return verify(null, manifestData!, k, sig);
        } catch {
          return false;
        }
      });
      // The first failed check ends the read: nothing of an untrusted package is inflated.
      if (!result.signature_valid && !opts.allowUnsigned) {
        throw new Refused('the signature is not from a trusted key');
      }
      if (manifestError) throw manifestError;
      const problem = manifestProblem(result.manifest!);
      if (problem) throw problem;
    } else {
      const rel = h.path.slice('files/'.length);
      done.add(rel);
      const digest = hash!.digest('hex');
      hash = null;
      if (out) {
        const o: WriteStream = out;
        out = null;
        o.end();
        await finished(o);
      }
      if (digest !== expected.get(rel)!.sha256) throw new Refused(`${rel}: sha256 mismatch`);
    }
    entry = null;
  };

  const feed = async (chunk: Buffer): Promise<void> => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      if (ended) return;
      if (entry) {
        if (remaining > 0) {
          if (buf.length === 0) return;
          const take = buf.subarray(0, Math.min(remaining, buf.length));
          buf = buf.subarray(take.length);
          remaining -= take.length;
          if (index <= 2) meta.push(take);
          else {
            hash!.update(take);
            const o: WriteStream | null = out;
            if (o && !o.write(take)) await new Promise<void>((r) => o.once('drain', () => r()));
          }
          continue;
        }
        if (buf.length < padding) return;
        buf = buf.subarray(padding);
        await endEntry();
        continue;
      }
      if (buf.length < 512) return;
      const h = parseHeader(buf.subarray(0, 512));
      buf = buf.subarray(512);
      if (!h) {
        ended = true;
        return;
      }
      entry = h;
      remaining = h.size;
      padding = (512 - (h.size % 512)) % 512;
      await startEntry(h);
    }
  };

  const input = createReadStream(file, { highWaterMark: READ_CHUNK });
  const gunzip = createGunzip({ chunkSize: READ_CHUNK });
  try {
    input.pipe(gunzip);
    input.once('error', (err) => gunzip.destroy(err));
    for await (const chunk of gunzip) {
      result.inflated += (chunk as Buffer).length;
      if (now() - began > budgetMs) {
        throw new Refused(`the package could not be verified within ${budgetMs / 1000} s`);
      }
      await feed(chunk as Buffer);
      // The end-of-archive block: whatever follows is not read (nor inflated).
      if (ended) break;
    }
    if (writeError) throw new Refused(`could not unpack: ${(writeError as Error).message}`);
    if (!ended || entry) throw new Refused('the package is truncated');
    if (index < 2) throw new Refused('no manifest');
    const missing = [...expected.keys()].find((p) => !done.has(p));
    if (missing) throw new Refused(`${missing} is missing`);
    result.firmware_valid = true;
    result.reason = result.signature_valid ? null : 'the signature is not from a trusted key';
  } catch (e) {
    result.firmware_valid = false;
    result.downgrade = e instanceof Refused && e.downgrade;
    result.reason =
      e instanceof Refused ? e.message : `unreadable package: ${(e as Error).message}`;
  } finally {
    (out as WriteStream | null)?.destroy();
    input.destroy();
    gunzip.destroy();
  }
  return result;
}
