/**
 * H.265 where the browser takes it, and H.264 where it does not (docs/webrtc.md "H.265"), with
 * the real console in Debian's Chromium on the testbed target. This Chromium decodes no H.265
 * over WebRTC (RTCRtpReceiver lists no H265, headless and with --disable-gpu, even with
 * WebRtcAllowH265Receive), so what is proved here is the fallback, both ways:
 * - the console's watch lists what Chromium receives (H.264 alone): an H.264-only offer, video;
 * - a console made to claim H.265 (getCapabilities patched before the page loads): the offer
 *   lists H265 first, Chromium's answer leaves it out, and the picture comes over H.264.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { Browser } from './fixtures/browser';
import { byTestId, loginViaUi, startConsole, stopConsole } from './fixtures/console';
import type { ServerProcess } from './fixtures/server';

let server: ServerProcess | undefined;
let browser: Browser | undefined;

afterEach(async () => {
  await stopConsole(browser, server);
  server = undefined;
  browser = undefined;
});

/** The Janus messages the page sent and got on /janus/ws, parsed. */
function janusTraffic(page: Page): { sent: unknown[]; got: unknown[] } {
  const traffic = { sent: [] as unknown[], got: [] as unknown[] };
  page.on('websocket', (ws) => {
    if (!ws.url().includes('/janus/ws')) return;
    const parse = (payload: string | Buffer): unknown => {
      try {
        return JSON.parse(String(payload));
      } catch {
        return null;
      }
    };
    ws.on('framesent', (f) => traffic.sent.push(parse(f.payload)));
    ws.on('framereceived', (f) => traffic.got.push(parse(f.payload)));
  });
  return traffic;
}

interface Seen {
  watchCodecs: unknown;
  offer: string;
  answer: string;
}

async function watchAndPlay(page: Page, s: ServerProcess): Promise<Seen> {
  const traffic = janusTraffic(page);
  await loginViaUi(page, s);
  await byTestId(page, 'video-webrtc').waitFor({ state: 'attached', timeout: 20_000 });
  const frames = async (): Promise<number> =>
    Number((await page.locator('[data-frames]').first().getAttribute('data-frames')) ?? 0);
  await expect.poll(frames, { timeout: 30_000, interval: 300 }).toBeGreaterThan(10);
  const find = <T>(list: unknown[], pick: (m: Record<string, unknown>) => T | undefined): T => {
    for (const m of list) {
      const v = m && typeof m === 'object' ? pick(m as Record<string, unknown>) : undefined;
      if (v !== undefined) return v;
    }
    throw new Error('not seen on /janus/ws');
  };
  const body = (m: Record<string, unknown>) => m['body'] as Record<string, unknown> | undefined;
  const jsep = (m: Record<string, unknown>) =>
    m['jsep'] as { type: string; sdp: string } | undefined;
  return {
    watchCodecs: find(traffic.sent, (m) =>
      body(m)?.['request'] === 'watch'
        ? ((body(m)!['params'] as Record<string, unknown>)['codecs'] ?? null)
        : undefined,
    ),
    offer: find(traffic.got, (m) => (jsep(m)?.type === 'offer' ? jsep(m)!.sdp : undefined)),
    answer: find(traffic.sent, (m) => (jsep(m)?.type === 'answer' ? jsep(m)!.sdp : undefined)),
  };
}

/** The m=video line of an SDP and the codec names its payload types map to. */
function videoCodecs(sdp: string): string[] {
  const mline = /^m=video \S+ \S+ (.*)$/m.exec(sdp)?.[1]?.trim().split(' ') ?? [];
  return mline.map((pt) => new RegExp(`^a=rtpmap:${pt} ([^/]+)/`, 'm').exec(sdp)?.[1] ?? pt);
}

describe('H.265 negotiation with a browser that has no H.265', () => {
  it('gets an H.264-only offer from the codecs Chromium lists, and video', async () => {
    ({ server, browser } = await startConsole({ target: 'testbed' }));
    const page = await browser.page();
    const seen = await watchAndPlay(page, server);
    expect(seen.watchCodecs).toEqual(['h264']);
    expect(videoCodecs(seen.offer)).toEqual(['H264']);
    expect(videoCodecs(seen.answer)).toEqual(['H264']);
  });

  it('falls back to H.264 when the browser claims H.265 but its answer leaves it out', async () => {
    ({ server, browser } = await startConsole({ target: 'testbed' }));
    const page = await browser.page();
    await page.addInitScript(() => {
      const own = RTCRtpReceiver.getCapabilities.bind(RTCRtpReceiver);
      RTCRtpReceiver.getCapabilities = (kind: string) => {
        const caps = own(kind);
        if (kind !== 'video' || !caps) return caps;
        const h265 = { mimeType: 'video/H265', clockRate: 90_000 };
        return { ...caps, codecs: [...caps.codecs, h265] };
      };
    });
    const seen = await watchAndPlay(page, server);
    expect(seen.watchCodecs).toEqual(['h265', 'h264']);
    expect(videoCodecs(seen.offer)).toEqual(['H265', 'H264']);
    expect(seen.offer).toMatch(/a=fmtp:100 level-id=\d+;profile-id=1;tier-flag=0;tx-mode=SRST/);
    expect(videoCodecs(seen.answer)).toEqual(['H264']);
  });
});
