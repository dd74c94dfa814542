/**
 * The DTLS key exchange of werift (the WebRTC stack, janus/peer.ts) on OpenSSL instead of
 * JavaScript. werift makes its ECDHE key pair and the premaster secret with tweetnacl (X25519,
 * which Chromium offers first) and @noble/curves (P-256), both pure JavaScript. Under the
 * server's V8 settings (no TurboFan, young-generation.ts) `npm run bench -- dtls` gave 45 ms of
 * the event loop per viewer's handshake for X25519 (the first of a process 59.6 ms) and 75.8 ms
 * for the first P-256 one; here 0.9 and 0.5 ms.
 *
 * scripts/build.mjs points werift's own imports here when it bundles webrtc-peer.js: `tweetnacl`
 * and `@noble/curves/p256` from its ESM bundle, lib/index.mjs, which uses `box.keyPair`,
 * `scalarMult`, and `p256`'s `utils.randomPrivateKey`, `getPublicKey` and `getSharedSecret`
 * alone. Same inputs and outputs as theirs (dtls-curves.test.ts checks each against the library
 * it replaces), with one difference: a peer's key that gives an all-zero X25519 secret (a
 * small-order point, RFC 7748 section 6.1) or a point off the P-256 curve throws, and werift
 * drops that handshake.
 */
import {
  createECDH,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
} from 'node:crypto';

/** DER of an X25519 PKCS#8 private key and SPKI public key, before their 32 raw bytes. */
const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const X25519_KEY_BYTES = 32;
const P256_KEY_BYTES = 32;

/** A fresh 32-byte array (werift takes `.buffer` of what it gets: never a view of a pool). */
function own(bytes: Buffer): Uint8Array {
  const out = new Uint8Array(bytes.length);
  out.set(bytes);
  return out;
}

function rawKey(base64url: string | undefined): Buffer {
  const key = Buffer.from(base64url ?? '', 'base64url');
  if (key.length !== X25519_KEY_BYTES) throw new Error('X25519: the key is not 32 bytes');
  return key;
}

/** tweetnacl's `box.keyPair()`: a random X25519 secret key and its public key. */
function x25519KeyPair(): { secretKey: Uint8Array; publicKey: Uint8Array } {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  return {
    secretKey: own(rawKey(privateKey.export({ format: 'jwk' }).d)),
    publicKey: own(rawKey(publicKey.export({ format: 'jwk' }).x)),
  };
}

/** tweetnacl's `scalarMult(n, p)`: the X25519 shared secret of secret key n and public key p. */
function x25519(secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  if (secretKey.length !== X25519_KEY_BYTES || publicKey.length !== X25519_KEY_BYTES) {
    throw new Error('X25519: keys are 32 bytes');
  }
  return own(
    diffieHellman({
      privateKey: createPrivateKey({
        key: Buffer.concat([X25519_PKCS8_PREFIX, secretKey]),
        format: 'der',
        type: 'pkcs8',
      }),
      publicKey: createPublicKey({
        key: Buffer.concat([X25519_SPKI_PREFIX, publicKey]),
        format: 'der',
        type: 'spki',
      }),
    }),
  );
}

/** What werift reads of tweetnacl (its default export). */
const nacl = { box: { keyPair: x25519KeyPair }, scalarMult: x25519 };
export default nacl;

/** A P-256 private key: 32 random bytes below the group order, as OpenSSL makes them. */
function p256PrivateKey(): Uint8Array {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const key = ecdh.getPrivateKey();
  return own(Buffer.concat([Buffer.alloc(P256_KEY_BYTES - key.length), key]));
}

/** The uncompressed public point (65 bytes, 0x04 | x | y) of a P-256 private key. */
function p256PublicKey(privateKey: Uint8Array, compressed = true): Uint8Array {
  if (compressed) throw new Error('P-256: only uncompressed public keys are made here');
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(privateKey);
  return own(ecdh.getPublicKey());
}

/**
 * The shared point of a P-256 private key and a peer's public point, in @noble/curves' shape
 * (a prefix byte, then x). werift keeps only x, the premaster secret (RFC 4492 5.10): the prefix
 * here is always 0x02, y's parity not being computed.
 */
function p256SharedSecret(privateKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(privateKey);
  return own(Buffer.concat([Buffer.of(2), ecdh.computeSecret(publicKey)]));
}

/** What werift reads of @noble/curves' `p256`. */
export const p256 = {
  utils: { randomPrivateKey: p256PrivateKey },
  getPublicKey: p256PublicKey,
  getSharedSecret: p256SharedSecret,
};
