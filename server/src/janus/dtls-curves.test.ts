import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import nacl, { p256 } from './dtls-curves';

// The libraries these replace, as werift itself resolves them.
const fromWerift = createRequire(createRequire(import.meta.url).resolve('werift'));
const tweetnacl = fromWerift('tweetnacl') as {
  box: { keyPair(): { secretKey: Uint8Array; publicKey: Uint8Array } };
  scalarMult: ((n: Uint8Array, p: Uint8Array) => Uint8Array) & {
    base(n: Uint8Array): Uint8Array;
  };
};
const noble = fromWerift('@noble/curves/p256') as { p256: typeof p256 };

describe('X25519 on OpenSSL, as tweetnacl', () => {
  it('makes a key pair whose public key is the secret key times the base point', () => {
    const ours = nacl.box.keyPair();
    expect(ours.secretKey.buffer.byteLength).toBe(32);
    expect(ours.publicKey.buffer.byteLength).toBe(32);
    expect(Buffer.from(tweetnacl.scalarMult.base(ours.secretKey))).toEqual(
      Buffer.from(ours.publicKey),
    );
  });

  it('agrees with tweetnacl on the shared secret, either side ours', () => {
    for (let i = 0; i < 8; i += 1) {
      const a = nacl.box.keyPair();
      const b = tweetnacl.box.keyPair();
      const ours = Buffer.from(nacl.scalarMult(a.secretKey, b.publicKey));
      expect(ours).toHaveLength(32);
      expect(ours).toEqual(Buffer.from(tweetnacl.scalarMult(b.secretKey, a.publicKey)));
      expect(Buffer.from(nacl.scalarMult(b.secretKey, a.publicKey))).toEqual(ours);
    }
  });

  it('refuses a small-order public key (an all-zero secret) and keys of the wrong size', () => {
    const a = nacl.box.keyPair();
    expect(Buffer.from(tweetnacl.scalarMult(a.secretKey, new Uint8Array(32)))).toEqual(
      Buffer.alloc(32),
    );
    expect(() => nacl.scalarMult(a.secretKey, new Uint8Array(32))).toThrow();
    expect(() => nacl.scalarMult(a.secretKey, new Uint8Array(31))).toThrow(/32 bytes/);
    expect(() => nacl.scalarMult(new Uint8Array(33), a.publicKey)).toThrow(/32 bytes/);
  });
});

describe('P-256 on OpenSSL, as @noble/curves', () => {
  it('makes a private key and its uncompressed public point', () => {
    const key = p256.utils.randomPrivateKey();
    expect(key.buffer.byteLength).toBe(32);
    const pub = p256.getPublicKey(key, false);
    expect(Buffer.from(pub)).toEqual(Buffer.from(noble.p256.getPublicKey(key, false)));
    expect(pub[0]).toBe(4);
    expect(() => p256.getPublicKey(key)).toThrow(/uncompressed/);
  });

  it('agrees with @noble/curves on the shared x, either side ours', () => {
    for (let i = 0; i < 4; i += 1) {
      const a = p256.utils.randomPrivateKey();
      const b = noble.p256.utils.randomPrivateKey();
      const ours = p256.getSharedSecret(a, noble.p256.getPublicKey(b, false));
      expect(ours).toHaveLength(33);
      const theirs = noble.p256.getSharedSecret(b, p256.getPublicKey(a, false));
      expect(Buffer.from(ours.subarray(1))).toEqual(Buffer.from(theirs.subarray(1)));
    }
  });

  it('refuses a point off the curve', () => {
    const a = p256.utils.randomPrivateKey();
    const bad = Buffer.from(p256.getPublicKey(a, false));
    bad[64] = bad[64]! ^ 1;
    expect(() => p256.getSharedSecret(a, bad)).toThrow();
  });
});
