/**
 * The replica's TLS certificate: the configured files, or at first start a self-signed one made
 * with `openssl` in the data folder (EC P-256, the public host name and loopback as names).
 * Replicas sharing a data folder may start at once: one makes the pair (under an exclusive lock
 * file), the others wait for it. Devices pin a self-signed fleet at bind time (docs/cloud.md).
 */
import { spawnSync } from 'node:child_process';
import { isIP } from 'node:net';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { selfSignedArgs } from '../../server/src/services/tls';

export interface TlsPair {
  cert: Buffer;
  key: Buffer;
  /** Made now (first start), not read. */
  made: boolean;
}

const LOCK_STALE_MS = 30_000;

function subjectAltNames(host: string): string {
  const names = new Set<string>([`DNS:localhost`, `IP:127.0.0.1`, `IP:::1`]);
  names.add(isIP(host) ? `IP:${host}` : `DNS:${host}`);
  return [...names].join(',');
}

function make(certPath: string, keyPath: string, host: string): void {
  const work = mkdtempSync(join(dirname(certPath), '.tls-'));
  try {
    const r = spawnSync(
      'openssl',
      selfSignedArgs({
        subject: `/CN=${host.replace(/[/\\]/g, '')}`,
        san: subjectAltNames(host),
        days: 825,
        keyOut: join(work, 'key.pem'),
        certOut: join(work, 'cert.pem'),
      }),
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr || r.error?.message}`);
    // key first: whoever sees the certificate may read the key
    renameSync(join(work, 'key.pem'), keyPath);
    renameSync(join(work, 'cert.pem'), certPath);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The certificate and key at `tls`, made self-signed for `host` when both are missing. */
export async function ensureCertificate(
  tls: { cert: string; key: string },
  host: string,
  timeoutMs = 20_000,
): Promise<TlsPair> {
  const read = (made: boolean): TlsPair => ({
    cert: readFileSync(tls.cert),
    key: readFileSync(tls.key),
    made,
  });
  if (existsSync(tls.cert) && existsSync(tls.key)) return read(false);
  mkdirSync(dirname(tls.cert), { recursive: true, mode: 0o700 });
  mkdirSync(dirname(tls.key), { recursive: true, mode: 0o700 });
  const lock = `${tls.cert}.lock`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let fd: number | null = null;
    try {
      fd = openSync(lock, 'wx', 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // a replica killed while making it leaves the lock behind
      try {
        if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) rmSync(lock, { force: true });
      } catch {
        // gone meanwhile
      }
    }
    if (fd !== null) {
      try {
        closeSync(fd);
        if (existsSync(tls.cert) && existsSync(tls.key)) return read(false);
        if (existsSync(tls.cert) !== existsSync(tls.key)) {
          throw new Error(`only one of ${tls.cert} and ${tls.key} exists: give both or neither`);
        }
        make(tls.cert, tls.key, host);
        return read(true);
      } finally {
        rmSync(lock, { force: true });
      }
    }
    if (existsSync(tls.cert) && existsSync(tls.key)) return read(false);
    if (Date.now() > deadline) throw new Error(`another replica holds ${lock}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
