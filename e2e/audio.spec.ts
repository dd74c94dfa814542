/**
 * Sound both ways on the QEMU target, in Chromium through the real console (issue 14).
 *
 * The guest (scripts/build-guest.mjs) is the oracle on its side: `tone <hz> <s>` plays a sine on
 * its sound card, `hear <hz> <s>` prints `heard <hz>` once its sound card records that frequency,
 * `listen <s>` prints the dominant frequency and level it records; the commands are typed on
 * its serial shell. The page's side is a WebAudio tap on the audio track the console receives
 * (e2e/fixtures/audio.ts), with what the user hears of it (the console's <audio> element: muted,
 * paused, volume). The microphone is Chromium's fake capture device playing a 700 Hz WAV.
 *
 * One server and VM for the file; the microphone's enable flow restarts them (SPEC 4).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import type { AudioState } from '@kvm/protocol';
import { Browser } from './fixtures/browser';
import { byTestId, expectText, initDevice, loginViaUi } from './fixtures/console';
import { ServerProcess } from './fixtures/server';
import { serialLog, stopQemuConsole, until } from './fixtures/qemu';
import {
  installAudioProbe,
  pageLevel,
  pageListen,
  serialText,
  serialWait,
  serialWrite,
  toneWav,
} from './fixtures/audio';

const SPEAKER_HZ = 1000;
const MIC_HZ = 700;

let server: ServerProcess | undefined;
let browser: Browser | undefined;
let page: Page;
let wav: { path: string; dispose: () => Promise<void> } | undefined;

/** `GET /api/audio` with the page's session. */
const audioState = (p: Page) =>
  p.evaluate(async () => {
    const res = await fetch('/api/audio');
    return ((await res.json()) as { result: AudioState }).result;
  });

/** The console's <audio> element: muted / paused as the user would hear it. */
const remoteAudio = (p: Page) =>
  p.evaluate(() => {
    const el = document.querySelector<HTMLAudioElement>('[data-testid="remote-audio"]');
    return el ? { muted: el.muted, paused: el.paused, volume: el.volume } : null;
  });

/**
 * Waits for a `guest ready` that `before` (the log as it was) did not have. The restarted QEMU
 * starts its log afresh (logappend=off), and a fresh log may soon be longer than the old one (a
 * boot is ~320 characters, the old log only a few lines more): so a log that goes on from
 * `before` is read after it, any other is a new one and read whole.
 */
async function guestReady(before: string, timeout = 180_000): Promise<void> {
  await until(
    server,
    'guest ready',
    async () => {
      const text = await serialLog(server);
      return text.startsWith(before)
        ? text.slice(before.length).includes('guest ready')
        : text.includes('guest ready');
    },
    timeout,
  );
}

/** Types `line` on the guest's serial shell and waits for `re` in what follows. */
async function guest(line: string, re: RegExp, timeout = 20_000): Promise<RegExpExecArray> {
  const dir = server!.dataDir;
  const from = (await serialText(dir)).length;
  await serialWrite(dir, line);
  return (await serialWait(dir, from, re, timeout, 50)).match;
}

beforeAll(async () => {
  // each part kept as soon as it exists, so that afterAll stops it whatever failed after
  wav = await toneWav(MIC_HZ, 60);
  server = await ServerProcess.start({ target: 'qemu' });
  await initDevice(server);
  browser = await Browser.launch({ fakeMicrophone: wav.path });
  page = await browser.page();
  await installAudioProbe(page);
  await loginViaUi(page, server);
  await guestReady('');
}, 240_000);
afterAll(async () => {
  try {
    await stopQemuConsole(browser, server);
  } finally {
    await wav?.dispose();
  }
}, 60_000);

/** The status bar's volume control until it says `state` (clicking it: mute, unmute, unblock). */
async function soundTo(state: 'on' | 'muted'): Promise<void> {
  const button = byTestId(page, 'audio-volume');
  await expect
    .poll(
      async () => {
        const now = await button.getAttribute('data-state');
        if (now !== state && (now === 'on' || now === 'muted' || now === 'blocked')) {
          // 'blocked' (autoplay) takes a click to play, then reads 'on'
          await button.click();
        }
        return button.getAttribute('data-state');
      },
      { timeout: 20_000, interval: 1_000 },
    )
    .toBe(state);
}

/**
 * The guest's `listen 1`: whether the dominant frequency it records now is the mic's tone.
 * Quick on silence; with sound its frequency scan takes the guest several seconds.
 */
async function guestListens(): Promise<boolean> {
  const m = await guest('listen 1', /listen ([\d.]+) ([\d.]+)/, 60_000);
  return Math.abs(Number(m[1]) - MIC_HZ) <= 25;
}

/** The guest's `hear <MIC_HZ> <seconds>`: `heard 700` at once, or `hear none` after it. */
async function guestHears(seconds: number): Promise<string> {
  return (await guest(`hear ${MIC_HZ} ${seconds}`, /heard \d+|hear none/, 30_000))[0];
}

/** The microphone's tone reaches the guest (each round records up to 5 s). */
async function micReachesGuest(): Promise<void> {
  await expect
    .poll(() => guestHears(5), { timeout: 60_000, interval: 500 })
    .toBe(`heard ${MIC_HZ}`);
}

/** The guest records no microphone tone: 2 s of `hear` without it, then `listen` agrees. */
async function micSilentInGuest(): Promise<void> {
  await expect.poll(() => guestHears(2), { timeout: 60_000, interval: 500 }).toBe('hear none');
  expect(await guestListens()).toBe(false);
}

/** The guest plays SPEAKER_HZ for `seconds` in the background (its shell goes on). */
async function guestTone(seconds: number): Promise<void> {
  await guest(`tone ${SPEAKER_HZ} ${seconds} &`, new RegExp(`tone start ${SPEAKER_HZ}`));
}

describe('sound both ways on the QEMU guest', () => {
  it("plays the guest's tone in the page", async () => {
    // the sound comes with the WebRTC session
    await expect.poll(() => pageListen(page, SPEAKER_HZ), { timeout: 60_000 }).toBe(true);
    await soundTo('on');
    await expect
      .poll(async () => (await pageLevel(page)).gain, { timeout: 10_000 })
      .toBeGreaterThan(0);

    await guestTone(30);
    await expect
      .poll(async () => (await pageLevel(page)).level, { timeout: 15_000 })
      .toBeGreaterThan(0.1);
    // the tone it is, not just sound: a frequency away from it is far weaker
    // (levels are computed as blocks arrive: the window fills with the new frequency's)
    await pageListen(page, 1500);
    await expect
      .poll(async () => (await pageLevel(page)).level, { timeout: 5_000 })
      .toBeLessThan(0.05);
    await pageListen(page, SPEAKER_HZ);
  }, 120_000);

  it('enables the microphone: confirm, restart, reconnect, success toast', async () => {
    expect((await audioState(page)).mic.enabled).toBe(false);
    await expect
      .poll(() => byTestId(page, 'audio-mic').getAttribute('data-state'))
      .toBe('disabled');
    const before = await serialLog(server);
    await byTestId(page, 'audio-mic').click();
    await byTestId(page, 'audio-mic-enable-confirm').click();
    await expectText(page, 'Microphone enabled', 120_000);
    expect((await audioState(page)).mic.enabled).toBe(true);
    // the restart rebooted the VM
    await guestReady(before);
  }, 240_000);

  it("the fake microphone's tone is recorded by the guest", async () => {
    const mic = byTestId(page, 'audio-mic');
    if ((await mic.getAttribute('data-state')) === 'off') await mic.click();
    await expect.poll(() => mic.getAttribute('data-state'), { timeout: 15_000 }).toBe('on');
    await expect
      .poll(async () => (await audioState(page)).mic.active, { timeout: 30_000 })
      .toBe(true);
    // SPEC 9's meter moves with the 700 Hz tone
    await expect
      .poll(
        async () => Number(await byTestId(page, 'audio-mic-meter').getAttribute('data-level')),
        {
          timeout: 10_000,
        },
      )
      .toBeGreaterThan(0);
    // the first round may start before the sound arrives
    await micReachesGuest();
  }, 120_000);

  it('mute stops both: the page plays nothing, the guest records no tone', async () => {
    await expect.poll(() => pageListen(page, SPEAKER_HZ), { timeout: 30_000 }).toBe(true);
    await soundTo('on');
    await guestTone(40);
    await expect
      .poll(async () => (await pageLevel(page)).level, { timeout: 15_000 })
      .toBeGreaterThan(0.1);
    await micReachesGuest();

    await soundTo('muted');
    // what the user hears: the element muted and the track silent
    await expect
      .poll(
        async () => {
          const l = await pageLevel(page);
          return l.gain === 0 && l.level < 0.02;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    expect((await remoteAudio(page))?.muted).toBe(true);
    // the microphone's track follows the muted setting
    await micSilentInGuest();

    // unmuted, both come back
    await soundTo('on');
    await expect
      .poll(
        async () => {
          const l = await pageLevel(page);
          return l.gain > 0 && l.level > 0.1;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    await micReachesGuest();
  }, 240_000);

  it('the microphone turned off: the guest records no tone', async () => {
    await byTestId(page, 'audio-mic').click();
    await expect.poll(() => byTestId(page, 'audio-mic').getAttribute('data-state')).toBe('off');
    await micSilentInGuest();
  }, 150_000);
});
