/**
 * Imported first by main.ts, before any other module runs: V8's heap settings, set at run time
 * (not node flags) so every way of starting the server gets them.
 *
 * --semi-space-growth-factor=1: V8 grows the young generation while startup's objects survive
 * its collections and then keeps that size: 5 MB of an idle server's resident memory that holds
 * only garbage between scavenges. At its first size the scavenges come more often and stay short
 * (they copy only what lives), which suits a server whose steady work is small messages and
 * frames held outside the heap.
 *
 * --optimize-for-size: the old generation grows by a smaller factor and full collections
 * compact and give pages back. Idle RSS 3 s after a login, the same bundle three starts each
 * on one loaded machine: 91.8-92.1 MB without it, 86.7-87.9 MB with it. (As a node flag it also
 * sizes the heap at start and saves more, but `node server/dist/main.js` takes no flags.)
 *
 * --no-opt: no TurboFan. The server's JavaScript runs as bytecode and Sparkplug's baseline code;
 * its heavy work is native (ffmpeg in its own process, Buffer copies and fills, OpenSSL, zlib).
 * The optimizing compiler's own code pages in the node binary (about 3 MB, touched at its first
 * use), its scratch zones left in malloc's heap and the optimized code cost an idle server 4.5 MB
 * before the event socket and 7-9 MB with it, where the frames' path gets hot (issue 28's
 * eleventh round: 67.7-68.0 / 70.1-73.8 MB -> 63.2-63.5 / 63.3-64.9 MB, alternating starts).
 * What it costs in time (docs/performance.md, eleventh round): the built server's CPU while a
 * viewer's frames flow, its cold start and QEMU glass-to-glass were within the runs' spread; the
 * two pieces of hot JavaScript it slowed were moved to native code (werift's DTLS key exchange,
 * janus/dtls-curves.ts; the start-code search, media/annexb.ts). Whether the testbed's direct
 * glass-to-glass tail grew is not settled: that bench runs the server in its own process.
 * KVM_TURBOFAN=1 turns TurboFan back on (the benches' A/B).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--semi-space-growth-factor=1');
setFlagsFromString('--optimize-for-size');
if (process.env['KVM_TURBOFAN'] !== '1') setFlagsFromString('--no-opt');

/** After a start has listened: long enough for its own answers, short of a user's first visit. */
const SETTLE_AFTER_MS = 1500;

/**
 * Two full collections SETTLE_AFTER_MS after a start (main.ts calls it once listening). The
 * start leaves its garbage in old-generation pages (the bundle's parse, the routes' and schemas'
 * builders) and an idle server allocates too little for V8 to ever run a full collection on its
 * own, so those pages stayed resident for the process's life. The first collection frees the
 * garbage, the second (with --optimize-for-size) compacts and gives the emptied pages back:
 * idle RSS 3 s after a login 71.6-72.1 -> 69.6-70.1 MB (same build, alternating starts); one
 * collection alone gave back about 0.5 MB. Both flush the bytecode of every function not running
 * (`--stress-flush-code`, V8's testing flag, set only around them: V8 otherwise flushes only
 * functions unused over several collections, which an idle server never runs): 1-1.5 MB less
 * again (issue 28's eighth round, four alternating runs of e2e/idle-memory.spec.ts). They also
 * flush the Sparkplug (baseline) code of those functions (`--flush-baseline-code`, likewise only
 * around them: V8 keeps baseline code for the process's life otherwise): the start's code that
 * ran often enough to be compiled so, 0.5-0.6 MB (issue 28's sixteenth round, five alternating
 * starts each: 59.9-60.3 -> 59.1-59.7 MB with the event socket). Each takes 20-90 ms of the main
 * thread on the loaded 2-core machine, once per start. `gc` comes from a throwaway context (--expose-gc set now only
 * adds it to contexts made later), dropped after use. KVM_NO_HEAP_SETTLE=1 turns it off (the
 * bench's A/B).
 */
export function settleHeapSoon(): void {
  if (process.env['KVM_NO_HEAP_SETTLE'] === '1') return;
  const timer = setTimeout(() => {
    setFlagsFromString('--expose-gc');
    let gc = runInNewContext('gc') as (() => void) | null;
    // the start's code (module top levels, route and schema builders) runs once: its bytecode
    // goes now, and a function called again later is compiled again then
    setFlagsFromString('--stress-flush-code');
    setFlagsFromString('--flush-baseline-code');
    gc?.();
    gc?.();
    setFlagsFromString('--no-stress-flush-code');
    setFlagsFromString('--no-flush-baseline-code');
    gc = null;
  }, SETTLE_AFTER_MS);
  timer.unref();
}
