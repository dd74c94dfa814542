/**
 * The self-signed certificate made on first start and kept in the data folder. WebCodecs, the
 * microphone and secure cookies need a secure context off localhost (architecture.md).
 * Made with the system's openssl: an EC P-256 key, 10 years, SAN for localhost, the loopback
 * addresses and the host name.
 */
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '../process/run';
import { fsyncDir } from '../storage/atomic';

export interface TlsMaterial {
  key: Buffer;
  cert: Buffer;
}

/**
 * `openssl` arguments for a self-signed EC P-256 certificate and its key (unencrypted): the
 * device server's and the fleet's.
 */
export function selfSignedArgs(o: {
  subject: string;
  /** subjectAltName's value: `DNS:localhost,IP:127.0.0.1,...`. */
  san: string;
  days: number;
  keyOut: string;
  certOut: string;
}): string[] {
  return [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    String(o.days),
    '-subj',
    o.subject,
    '-addext',
    `subjectAltName=${o.san}`,
    '-keyout',
    o.keyOut,
    '-out',
    o.certOut,
  ];
}

export async function loadOrCreateCertificate(
  dir: string,
): Promise<TlsMaterial & { created: boolean }> {
  const keyPath = join(dir, 'server.key');
  const certPath = join(dir, 'server.crt');
  try {
    const [key, cert] = await Promise.all([readFile(keyPath), readFile(certPath)]);
    return { key, cert, created: false };
  } catch {
    // first start, or a half-made pair: make a new one
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmpKey = `${keyPath}.new`;
  const tmpCert = `${certPath}.new`;
  const host = hostname().replace(/[^A-Za-z0-9.-]/g, '') || 'kvm';
  const san = ['DNS:localhost', `DNS:${host}`, 'IP:127.0.0.1', 'IP:::1'].join(',');
  try {
    await runCommand(
      'openssl',
      selfSignedArgs({
        subject: `/CN=${host}/O=KVM console`,
        san,
        days: 3650,
        keyOut: tmpKey,
        certOut: tmpCert,
      }),
      { timeoutMs: 60_000 },
    );
    // certificate first, key last: a crash in between leaves no pair and we start over
    await rename(tmpCert, certPath);
    await rename(tmpKey, keyPath);
    await fsyncDir(dir);
  } finally {
    await rm(tmpKey, { force: true });
    await rm(tmpCert, { force: true });
  }
  const [key, cert] = await Promise.all([readFile(keyPath), readFile(certPath)]);
  return { key, cert, created: true };
}
