/**
 * `npm run bench -- webrtc-connect`: how long the console's WebRTC takes from the start of its
 * client to the first decoded frame, on an idle machine and with the CPU loaded, to set the
 * console's WebRTC → direct H.264 fallback time (issue 21 item 14; docs/webrtc.md "Fallback").
 *
 * The testbed server runs in this process and serves the real (built) console; Debian's
 * Chromium loads it logged in with `video_mode` webrtc. The console's VideoController leaves
 * performance marks: `kvm:webrtc:start` when it starts a WebRTC client (janus.js loaded; the
 * session, attach, features, watch, offer/answer, ICE, DTLS and the first decode follow) and
 * `kvm:webrtc:active` when that client decoded its first frame. One sample is the time between
 * the two for the page's first attempt. The attempt is not cut at the fallback time: after the
 * fallback it goes on in the background for WEBRTC_PROBE_MS (from its start), so samples up to
 * that are measured, not censored; longer ones are counted as `unfinished`.
 *
 * Load: `busy` child processes that spin (`for(;;){}`) at normal priority beside the server
 * and Chromium, on this 2-core machine: 0, as many as cores, and five times the cores (the load
 * CI had when sessions fell back, issue 21 item 19). Each level: SAMPLES page loads.
 *
 * JSON: per level `webrtc_connect_<busy>busy_{p50,p95,max}_ms`, `_samples`, `_over_fallback`
 * (samples longer than the console's current WEBRTC_FALLBACK_MS), `_unfinished` (of which
 * `_failed`: the attempt ended in an error, e.g. JanusStream's own 10 s session timeout, and the
 * console started another; the rest ran out of WEBRTC_PROBE_MS); and
 * `fallback_ms` (the console's value), `cores`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { buildTestApp } from '../server/src/test-helpers';
import { Browser } from '../e2e/fixtures/browser';
import { WEBRTC_FALLBACK_MS, WEBRTC_PROBE_MS } from '../web/src/features/video/webrtc-timing';
import { initAndLogin, note, percentile, round, runMarks, sized } from './lib';

const PASSWORD = 'benchpass';
const CORES = availableParallelism();
// short mode (npm test's e2e/bench-short.spec.ts): a light load only, not to starve the rest
const LEVELS = sized([0, CORES, CORES * 5], [0, CORES]);
const SAMPLES = sized(10, 2);

interface Sample {
  ms: number | null;
  /** Unfinished because the attempt failed (the console started a second one), not slow. */
  failed: boolean;
}

function busyLoops(n: number): ChildProcess[] {
  return Array.from({ length: n }, () =>
    spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }),
  );
}

/** The first attempt's start → active, ms; null when it did not decode within its window. */
async function connectTime(page: Page): Promise<Sample> {
  const deadline = Date.now() + WEBRTC_PROBE_MS + 15_000;
  for (;;) {
    const result = await page.evaluate((probeMs: number) => {
      const find = (name: string, attempt: number) =>
        performance
          .getEntriesByName(name)
          .find((e) => (e as PerformanceMark).detail?.attempt === attempt);
      const start = find('kvm:webrtc:start', 1);
      const active = find('kvm:webrtc:active', 1);
      // A second attempt started: the first one failed (before its window ran out) or was slow.
      const second = find('kvm:webrtc:start', 2);
      return {
        ms: start && active ? active.startTime - start.startTime : null,
        ended: second !== undefined,
        failed:
          start !== undefined &&
          second !== undefined &&
          second.startTime - start.startTime < probeMs,
      };
    }, WEBRTC_PROBE_MS);
    if (result.ms !== null) return { ms: result.ms, failed: false };
    if (result.ended || Date.now() > deadline) return { ms: null, failed: result.failed };
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function level(browser: Browser, base: string, token: string, busy: number) {
  const loops = busyLoops(busy);
  const samples: Sample[] = [];
  try {
    // let the scheduler feel the load before the first page
    await new Promise((r) => setTimeout(r, 1_000));
    for (let i = 0; i < SAMPLES; i += 1) {
      const page = await browser.context.newPage();
      await page.addInitScript((t: string) => localStorage.setItem('auth_token', t), token);
      await page.goto(`${base}/`);
      const sample = await connectTime(page);
      samples.push(sample);
      const { ms } = sample;
      note(
        `busy ${busy}: ${ms !== null ? `${round(ms)} ms` : sample.failed ? 'failed' : 'timed out'}`,
      );
      await page.close();
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    for (const loop of loops) loop.kill('SIGKILL');
  }
  const done = samples.flatMap((s) => (s.ms === null ? [] : [s.ms]));
  const key = `webrtc_connect_${busy}busy`;
  return {
    [`${key}_p50_ms`]: round(percentile(done, 50)),
    [`${key}_p95_ms`]: round(percentile(done, 95)),
    [`${key}_max_ms`]: round(Math.max(...done)),
    [`${key}_samples`]: done.length,
    [`${key}_over_fallback`]: done.filter((ms) => ms > WEBRTC_FALLBACK_MS).length,
    [`${key}_unfinished`]: samples.length - done.length,
    [`${key}_failed`]: samples.filter((s) => s.failed).length,
  };
}

const dataDir = await mkdtemp(join(tmpdir(), 'kvm-bench-webrtc-'));
const app = await buildTestApp(dataDir, { testbed: { width: 1280, height: 720 } });
await app.listen({ host: '127.0.0.1', port: 0 });
const addr = app.server.address();
const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
let browser: Browser | null = null;
try {
  const token = await initAndLogin(base, PASSWORD);
  const res = await fetch(`${base}/api/system/set_config`, {
    method: 'POST',
    headers: { token, 'content-type': 'application/json' },
    body: JSON.stringify({ video_mode: 'webrtc' }),
  });
  if (!res.ok) throw new Error(`set_config: ${res.status}`);
  browser = await Browser.launch();
  const out: Record<string, number> = {};
  for (const busy of LEVELS) Object.assign(out, await level(browser, base, token, busy));
  process.stdout.write(
    `${JSON.stringify({ ...runMarks(), fallback_ms: WEBRTC_FALLBACK_MS, cores: CORES, ...out })}\n`,
  );
} finally {
  await browser?.close();
  await app.close();
  await rm(dataDir, { recursive: true, force: true });
}
