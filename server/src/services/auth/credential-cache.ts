/**
 * Remembers header credentials (X-KVMD-User / X-KVMD-Passwd) that verified, for a short time, so
 * a kvmd client that sends them on every request costs one scrypt a minute instead of one per
 * request. Entries are HMAC-SHA256 digests under a key made at start and never stored, so the
 * memory of the process does not hold the password, and a digest is useless elsewhere.
 * The owner clears the cache whenever the password, the 2FA secret or the remembered devices
 * change.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** How long a verified header credential is taken on trust. */
export const CREDENTIAL_CACHE_TTL_MS = 60_000;
/** Distinct credentials remembered at once; the oldest goes first. */
export const CREDENTIAL_CACHE_MAX = 64;

export class CredentialCache {
  private readonly key = randomBytes(32);
  private readonly entries = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ttlMs = CREDENTIAL_CACHE_TTL_MS,
    private readonly max = CREDENTIAL_CACHE_MAX,
  ) {}

  digest(parts: readonly string[]): string {
    const mac = createHmac('sha256', this.key);
    // Length-prefixed, so ("ab","c") and ("a","bc") differ.
    for (const p of parts) mac.update(`${Buffer.byteLength(p)}:${p}`);
    return mac.digest('hex');
  }

  has(digest: string): boolean {
    const until = this.entries.get(digest);
    if (until === undefined) return false;
    if (until <= this.now()) {
      this.entries.delete(digest);
      return false;
    }
    return true;
  }

  add(digest: string): void {
    this.entries.delete(digest);
    this.entries.set(digest, this.now() + this.ttlMs);
    for (const k of this.entries.keys()) {
      if (this.entries.size <= this.max) break;
      this.entries.delete(k);
    }
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
