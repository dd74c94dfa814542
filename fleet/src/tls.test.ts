/** The self-signed certificate of a first start, made once when replicas start together. */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureCertificate } from './tls';

const dir = mkdtempSync(join(tmpdir(), 'fleet-tls-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('ensureCertificate', () => {
  it('three replicas sharing a data folder: one pair is made, all read it', async () => {
    const tls = { cert: join(dir, 'a', 'tls', 'cert.pem'), key: join(dir, 'a', 'tls', 'key.pem') };
    const pairs = await Promise.all([1, 2, 3].map(() => ensureCertificate(tls, 'fleet.example')));
    expect(pairs.filter((p) => p.made)).toHaveLength(1);
    expect(new Set(pairs.map((p) => p.cert.toString())).size).toBe(1);
    const x = new X509Certificate(pairs[0]!.cert);
    expect(x.subjectAltName).toContain('DNS:fleet.example');
    expect(x.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(
      x.checkPrivateKey(await import('node:crypto').then((c) => c.createPrivateKey(pairs[0]!.key))),
    ).toBe(true);
    // a second start reads what is there
    expect((await ensureCertificate(tls, 'fleet.example')).made).toBe(false);
  });

  it('refuses a certificate without its key', async () => {
    const cert = join(dir, 'b-cert.pem');
    writeFileSync(cert, 'x');
    await expect(ensureCertificate({ cert, key: join(dir, 'b-key.pem') }, 'h')).rejects.toThrow(
      /give both or neither/,
    );
  });
});
