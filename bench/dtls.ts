/**
 * `npm run bench -- dtls`: the CPU of a WebRTC viewer's DTLS key exchange on the server, werift's
 * own JavaScript (tweetnacl's X25519, @noble/curves' P-256) against what the server's bundle
 * runs instead (server/src/janus/dtls-curves.ts, OpenSSL), under the server's V8 settings
 * (--no-opt, server/src/young-generation.ts).
 *
 * One exchange is what the server does per handshake: make a key pair, then the shared secret
 * with the browser's public key. `*_first_ms` is the first exchange in this process (nothing
 * compiled or warmed yet: the first viewer after a start), `*_ms` the median of the next ones.
 *
 * JSON: `dtls_x25519_js_first_ms`, `dtls_x25519_js_ms`, `dtls_x25519_native_first_ms`,
 * `dtls_x25519_native_ms`, the same for `p256`, and `dtls_samples`.
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import nacl, { p256 } from '../server/src/janus/dtls-curves';
import { median, round, runMarks, sized } from './lib';

setFlagsFromString('--no-opt');

const fromWerift = createRequire(createRequire(import.meta.url).resolve('werift'));
const js = {
  nacl: fromWerift('tweetnacl') as typeof nacl,
  p256: (fromWerift('@noble/curves/p256') as { p256: typeof p256 }).p256,
};

type Exchange = (peerPublic: Uint8Array) => void;

function x25519With(lib: typeof nacl): Exchange {
  return (peerPublic) => {
    const own = lib.box.keyPair();
    lib.scalarMult(own.secretKey, peerPublic);
  };
}

function p256With(lib: typeof p256): Exchange {
  return (peerPublic) => {
    const key = lib.utils.randomPrivateKey();
    lib.getPublicKey(key, false);
    lib.getSharedSecret(key, peerPublic);
  };
}

function timed(exchange: Exchange, peerPublic: Uint8Array, count: number) {
  const times: number[] = [];
  for (let i = 0; i < count + 1; i += 1) {
    const t0 = performance.now();
    exchange(peerPublic);
    times.push(performance.now() - t0);
  }
  return { first: times[0]!, rest: times.slice(1) };
}

const samples = sized(30, 3);
const x25519Peer = nacl.box.keyPair().publicKey;
const p256Peer = p256.getPublicKey(p256.utils.randomPrivateKey(), false);
const out: Record<string, number | boolean> = { ...runMarks(), dtls_samples: samples };
for (const [name, exchange, peer] of [
  ['x25519_js', x25519With(js.nacl), x25519Peer],
  ['x25519_native', x25519With(nacl), x25519Peer],
  ['p256_js', p256With(js.p256), p256Peer],
  ['p256_native', p256With(p256), p256Peer],
] as const) {
  const { first, rest } = timed(exchange, peer, samples);
  out[`dtls_${name}_first_ms`] = round(first);
  out[`dtls_${name}_ms`] = round(median(rest));
}
process.stdout.write(`${JSON.stringify(out)}\n`);
