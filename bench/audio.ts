/**
 * `npm run bench -- audio`: issue 14's figures, one JSON object.
 *
 * The listener is Chromium with a minimal Janus client in the page (e2e/fixtures/audio.ts
 * `watch`): one audio-only watch, `video:false` (GL's second handle), no console, so that only
 * the sound path is measured; with `mic:true` its answer sends the page's own microphone, a
 * WebAudio oscillator behind a gain the bench switches on at a known time (no getUserMedia).
 * The received track is tapped by a WebAudio ScriptProcessor (256-frame blocks, 5.3 ms); each
 * block's level of the tone's frequency is stamped with the page's epoch time when it reached
 * the main thread (about 8 ms after the sound entered the page's WebAudio graph, measured on an
 * oscillator in the same graph). The page's clock is matched to the bench's with
 * lib.clockOffset.
 *
 * Full mode: the built server in a process of its own on the QEMU target (ServerProcess) with
 * `enable_mic` stored before its start; the guest's `tone`/`hear` commands are typed on its
 * serial shell (run/serial.sock) and answer on run/serial.log, polled every 2 ms.
 * - audio_latency_ms: the guest's `tone start <hz>` line seen on the serial log (it prints it
 *   right before its first sample; 16 characters at 115200 baud, ~1.4 ms) to the first block in
 *   the page with the tone's level at 0.1 or more (the tone is ~0.5): p50 of 12 (budget 150).
 *   `audio_latency_from_command_ms` counts from the serial command written instead (the
 *   guest's process start included).
 * - mic_latency_ms: `hear <hz> 5` typed in the guest, its `hear start <hz> <rms>` once it
 *   records, then the page's oscillator on at <hz> (the page's epoch time of the gain change)
 *   to `heard <hz>` seen on the serial log: p50 of 12 (budget 200).
 * - Every sample is provably its own (issue 21: a run once gave mic_latency_ms 3.1 with a p95
 *   of 501, a `heard` line printed before the tone was on and seen at the first poll): each
 *   has a frequency no earlier sample used (speakerHz, micHz), silence is proved before it (the
 *   page's received RMS under -40 dBFS for 100 ms; the guest's first 20 ms of recording), and
 *   what is detected must come after its own command (the page: a block after the tone was
 *   asked for; the guest: nothing detected before the page's tone, `heard <hz>` printed after).
 *   Samples that fail a proof are left out and counted: `audio_latency_unattributed`,
 *   `mic_latency_unattributed` (0 expected; the notes say why), beside `..._missed`.
 * - calibration_ms, calibration_cpu_ms (and their `_end_` twins), load_1m, cores:
 *   lib.machineSpeed at the start and the end: how fast the machine was, so that a reader can
 *   tell a slower machine from slower code (docs/webrtc.md, sound figures).
 * - audio_dropouts_60s: a 62 s `tone 1000` received by the page; from 0.5 s after its first
 *   block to 60 s later, runs of blocks whose 1 kHz level is under a third of the median level
 *   lasting 20 ms or more (four blocks, 21.3 ms): 0 expected. `audio_dropouts_source_60s`
 *   counts the same in the same minute at the source: the VM's speaker recorded by a second
 *   ffmpeg of the bench on the data folder's PulseAudio (the sink's monitor the server's encoder
 *   records): gaps there come from the guest or QEMU, not from the server or the browser.
 * - cpu_pct_audio: one listener (a listen-only watch, `video:false`, as GL's second handle; no
 *   microphone) while the guest plays a 12 s tone, over 10 s: the CPU time of the server
 *   process and its encoder (ffmpeg) from /proc/<pid>/stat, as % of one core (the notes split
 *   it by process). `cpu_pct_sound_server` is PulseAudio's in the same window: the QEMU
 *   target's sound card plumbing (the VM plays into it whether anyone listens or not; a
 *   hardware target captures from ALSA and has none), apart so the server's own figure is what
 *   it says. `cpu_pct_no_listener` is the server's over 10 s before the listener came.
 *
 * Short mode (`--short`, run by e2e/bench-short.spec.ts): the testbed target in this process
 * (buildTestApp), its simulated sound: `app.ctx.drivers.testbedAudio.tone(hz, ms)` (its
 * performance.now() at the start) and `heard(hz).at` for the guest's commands; 3 samples each,
 * a 5 s dropout window, a 2 s CPU window; the CPU is this process (server and the bench's Playwright client) and
 * its ffmpeg children. Its numbers are no figures (`short: true`).
 */
import { spawn } from 'node:child_process';
import { readdir, readFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../server/src/test-helpers';
import type { TestbedAudio } from '../server/src/drivers/audio/testbed';
import { s16, toneLevel } from '../server/src/drivers/audio/tone';
import { Browser } from '../e2e/fixtures/browser';
import { ServerProcess } from '../e2e/fixtures/server';
import {
  installAudioProbe,
  pageListen,
  serialText,
  serialWait,
  serialWrite,
} from '../e2e/fixtures/audio';
import {
  clockOffset,
  epochNow,
  initAndLogin,
  median,
  note,
  percentile,
  round,
  runMarks,
  sized,
  SHORT,
  machineSpeed,
} from './lib';

const PASSWORD = 'benchpass';
const SAMPLES = sized(12, 3);
const DROPOUT_S = sized(60, 5);
const CPU_MS = sized(10_000, 2_000);
const SPEAKER_HZ = 1000;
/**
 * One frequency per sample, none heard before in the run, so that no sample can take a tone
 * still sounding from an earlier one for its own: the speaker's 400 Hz apart (the page's 256-frame
 * blocks tell frequencies apart from about 375 Hz), the microphone's 200 Hz apart (the guest's
 * 20 ms windows: 100 Hz). Whole divisors of 48 kHz keep the guest's precomputed cycle short.
 */
const speakerHz = (i: number) => 600 + 400 * i;
const micHz = (i: number) => 500 + 200 * i;
/** Below this RMS (-40 dBFS; a tone is ~0.35) the page's received sound counts as silence. */
const SILENCE_RMS = 0.01;
/** A block in the page holds the tone from this level on (the tone is ~0.5). */
const DETECT = 0.1;
/** A gap: blocks under this share of the median level, this many in a row (21.3 ms). */
const GAP_SHARE = 1 / 3;
const GAP_BLOCKS = 4;
const CLK_TCK = 100;

/** What differs between the QEMU guest and the testbed's simulated sound. */
interface Target {
  base: string;
  token: string;
  /** Plays `hz` for `ms`; answers this process's epoch ms at the tone's start (and the command's). */
  tone(hz: number, ms: number): Promise<{ start: number; command: number }>;
  /** Waits until the tone played by `tone` is over. */
  toneDone(): Promise<void>;
  /**
   * Waits (bounded) until the guest's input is silent, then arms the microphone detector for
   * `hz` and answers once it records, with the RMS of its first 20 ms (the proof that nothing
   * sounds at the guest's input before the page's tone).
   */
  armHear(hz: number): Promise<{ rms: number }>;
  /** Something was detected since armHear, before the page's tone was on: not this sample's. */
  heardEarly(): Promise<boolean>;
  /** When `hz` was detected (epoch ms), counting only what the guest printed after this call. */
  heard(hz: number, timeoutMs: number): Promise<number>;
  /** Waits until the detector armed last has ended (detected, or gave up). */
  hearDone(): Promise<void>;
  /** The source's 1 kHz level per 256-frame block for `seconds` from now (QEMU only). */
  recordSource?: (seconds: number) => Promise<number[]>;
  /** Pids whose CPU counts as the server's sound. */
  cpuPids(): Promise<number[]>;
  close(): Promise<void>;
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** utime + stime (clock ticks) of a pid, 0 when it is gone. */
async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11] ?? 0) + Number(f[12] ?? 0);
}

/** Every descendant of `root` with its command name. */
async function descendants(root: number): Promise<Array<{ pid: number; comm: string }>> {
  const parent = new Map<number, { ppid: number; comm: string }>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    parent.set(Number(entry), { ppid, comm });
  }
  const found = new Set([root]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const [pid, { ppid }] of parent) {
      if (!found.has(pid) && found.has(ppid)) {
        found.add(pid);
        grew = true;
      }
    }
  }
  found.delete(root);
  return [...found].map((pid) => ({ pid, comm: parent.get(pid)!.comm }));
}

/** The command name of a pid ('' when it is gone). */
async function commOf(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
}

/**
 * % of one core the pids (looked up again at the end, for children started meanwhile) used;
 * the notes get it by command name.
 */
interface CpuUse {
  /** % of one core of every process measured. */
  total: number;
  /** Of it, the sound server's (PulseAudio: the QEMU target's sound card plumbing). */
  soundServer: number;
}

async function cpuPercent(
  pids: () => Promise<number[]>,
  ms: number,
  during: Promise<unknown> = wait(ms),
): Promise<CpuUse> {
  const before = new Map<number, number>();
  for (const pid of await pids()) before.set(pid, await cpuTicks(pid));
  const t0 = performance.now();
  await during;
  const seconds = (performance.now() - t0) / 1000;
  let ticks = 0;
  const byName = new Map<string, number>();
  for (const pid of await pids()) {
    const used = (await cpuTicks(pid)) - (before.get(pid) ?? 0);
    ticks += used;
    const name = await commOf(pid);
    byName.set(name, (byName.get(name) ?? 0) + used);
  }
  const share = (n: number) => (n / CLK_TCK / seconds) * 100;
  note(
    `cpu over ${round(seconds, 1)} s: ${[...byName].map(([n, v]) => `${n} ${round(share(v), 2)}%`).join(', ')}`,
  );
  return { total: share(ticks), soundServer: share(byName.get('pulseaudio') ?? 0) };
}

/** Runs of 256-frame blocks under `share` of the median level, `minBlocks` or longer. */
function countGaps(levels: number[], share: number, minBlocks: number) {
  const typical = median(levels);
  let gaps = 0;
  let run = 0;
  let longest = 0;
  for (const l of levels) {
    if (l < typical * share) {
      run += 1;
      longest = Math.max(longest, run);
      if (run === minBlocks) gaps += 1;
    } else run = 0;
  }
  return { gaps, typical, longest };
}

/**
 * Full mode's check of where gaps come from: the VM's speaker recorded at the source (ffmpeg on
 * the data folder's PulseAudio, the sink's monitor, as the server's encoder records it) for
 * `seconds`, its 1 kHz level per 256-frame block as the page's tap computes it.
 */
function recordSource(dataDir: string, seconds: number): Promise<number[]> {
  const child = spawn(
    'ffmpeg',
    [
      ...['-hide_banner', '-loglevel', 'error', '-f', 'pulse'],
      ...['-server', `unix:${join(dataDir, 'run', 'pa.sock')}`, '-name', 'bench'],
      ...['-sample_rate', '48000', '-channels', '2', '-fragment_size', '1920'],
      ...['-i', 'kvm_speaker.monitor', '-t', String(seconds), '-f', 's16le', 'pipe:1'],
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const chunks: Buffer[] = [];
  child.stdout.on('data', (d: Buffer) => chunks.push(d));
  return new Promise<number[]>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), (seconds + 20) * 1000);
    child.once('error', reject);
    child.once('exit', () => {
      clearTimeout(timer);
      const pcm = s16(Buffer.concat(chunks));
      const levels: number[] = [];
      for (let i = 0; i + 512 <= pcm.length; i += 512) {
        levels.push(toneLevel(pcm.subarray(i, i + 512), 48_000, 2, SPEAKER_HZ));
      }
      resolve(levels);
    });
  });
}

// --- targets ------------------------------------------------------------------------------

const MIC_PARAMS = JSON.stringify({ otg_functions: { enable_mic: true } });

async function storeMicEnabled(dataDir: string): Promise<void> {
  await mkdir(join(dataDir, 'system'), { recursive: true });
  await writeFile(join(dataDir, 'system', 'params.json'), MIC_PARAMS);
}

async function qemuTarget(): Promise<Target> {
  const server = await ServerProcess.start({ target: 'qemu', prepare: storeMicEnabled });
  try {
    const token = await initAndLogin(server.url, PASSWORD);
    const dir = server.dataDir;
    await serialWait(dir, 0, /guest ready/, 180_000, 200);
    let toneFrom = 0;
    let hearFrom = 0;
    let heardFrom = 0;
    return {
      base: server.url,
      token,
      async tone(hz, ms) {
        toneFrom = (await serialText(dir)).length;
        const command = epochNow();
        await serialWrite(dir, `tone ${hz} ${Math.ceil(ms / 1000)}`);
        const { seenAt } = await serialWait(
          dir,
          toneFrom,
          new RegExp(`tone start ${hz}\\b`),
          10_000,
          2,
        );
        return { start: seenAt, command };
      },
      async toneDone() {
        await serialWait(dir, toneFrom, /tone end/, 130_000, 50);
      },
      async armHear(hz) {
        // silence first: a tone the page sent before can still be on its way (a loaded machine
        // delayed the microphone by 0.9 s, and the guest then heard the previous sample's tone
        // as this one began): 40 ms probes until one records silence, for up to 10 s
        const deadline = Date.now() + 10_000;
        for (;;) {
          const from = (await serialText(dir)).length;
          await serialWrite(dir, `hear ${hz} 0.04`);
          const { match } = await serialWait(
            dir,
            from,
            new RegExp(`hear start ${hz} ([0-9.]+)`),
            15_000,
            5,
          );
          await serialWait(dir, from, /hear (end|none)/, 15_000, 5);
          if (Number(match[1]) < SILENCE_RMS || Date.now() > deadline) break;
          await wait(100);
        }
        hearFrom = (await serialText(dir)).length;
        await serialWrite(dir, `hear ${hz} 5`);
        // the guest's `hear start <hz> <rms>` once it records (after its first 20 ms)
        const { match } = await serialWait(
          dir,
          hearFrom,
          new RegExp(`hear start ${hz} ([0-9.]+)`),
          15_000,
          5,
        );
        return { rms: Number(match[1]) };
      },
      async heardEarly() {
        const text = await serialText(dir);
        // what the guest prints from here on is the sample's: the page's tone comes next
        heardFrom = text.length;
        return /heard \d/.test(text.slice(hearFrom));
      },
      async heard(hz, timeoutMs) {
        const { seenAt } = await serialWait(
          dir,
          heardFrom,
          new RegExp(`heard ${hz}\\b`),
          timeoutMs,
          2,
        );
        return seenAt;
      },
      async hearDone() {
        // the command's end, so the next one starts alone
        await serialWait(dir, hearFrom, /hear (end|none)/, 15_000, 50).catch(() => undefined);
      },
      async cpuPids() {
        const pid = server.pid;
        if (!pid) return [];
        const kids = await descendants(pid);
        return [pid, ...kids.filter((k) => !k.comm.startsWith('qemu')).map((k) => k.pid)];
      },
      recordSource: (seconds) => recordSource(dir, seconds),
      close: () => server.dispose(),
    };
  } catch (err) {
    note(`server log:\n${server.log.slice(-3000)}`);
    await server.dispose();
    throw err;
  }
}

async function testbedTarget(): Promise<Target> {
  const dir = await mkdtemp(join(tmpdir(), 'kvm-bench-audio-'));
  await storeMicEnabled(dir);
  let app: FastifyInstance | null = null;
  try {
    app = await buildTestApp(dir, { target: 'testbed' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const addr = app.server.address();
    const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const token = await initAndLogin(base, PASSWORD);
    const sound = app.ctx.drivers.testbedAudio as TestbedAudio | undefined;
    if (!sound) throw new Error('the testbed has no testbedAudio driver');
    let toneEnd = 0;
    let armed = 0;
    const closing = app;
    return {
      base,
      token,
      async tone(hz, ms) {
        const command = epochNow();
        const from = sound.tone(hz, ms);
        toneEnd = from + ms;
        return { start: performance.timeOrigin + from, command };
      },
      async toneDone() {
        await wait(Math.max(0, toneEnd - performance.now()));
      },
      async armHear(hz) {
        // the page sends silence all along: 100 ms of it decoded, then the level of this
        // sample's frequency and of the previous one there (the testbed has no RMS to read);
        // again until that is silence, for up to 10 s, as for the guest (a slower machine
        // still carried the previous sample's tone after the first 100 ms)
        const deadline = Date.now() + 10_000;
        let rms: number;
        do {
          sound.mark();
          await wait(100);
          rms = Math.max(sound.heard(hz).level, armed ? sound.heard(armed).level : 0);
        } while (rms >= SILENCE_RMS && Date.now() < deadline);
        armed = hz;
        return { rms };
      },
      async heardEarly() {
        return armed !== 0 && sound.heard(armed).at !== null;
      },
      async hearDone() {},
      async heard(hz, timeoutMs) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const { at } = sound.heard(hz);
          if (at !== null) return performance.timeOrigin + at;
          if (Date.now() > deadline) throw new Error(`the testbed never heard ${hz} Hz`);
          await wait(2);
        }
      },
      async cpuPids() {
        const kids = await descendants(process.pid);
        return [process.pid, ...kids.filter((k) => k.comm === 'ffmpeg').map((k) => k.pid)];
      },
      async close() {
        await closing.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await app?.close();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

// --- the page -----------------------------------------------------------------------------

async function openListener(browser: Browser, t: Target, mic: boolean): Promise<Page> {
  await browser.context.addCookies([{ name: 'auth_token', value: t.token, url: t.base }]);
  const page = await browser.context.newPage();
  await installAudioProbe(page);
  // a page of the server's origin that starts nothing itself
  await page.goto(`${t.base}/api/auth/check`);
  const answer = (await page.evaluate(
    `window.__kvmAudio.watch({ audio: true, video: false, mic: ${mic} })`,
  )) as { features: Record<string, unknown>; offer: string };
  note(`features ${JSON.stringify(answer.features)}`);
  const audio = answer.offer
    .split('\n')
    .filter((l) => /^m=audio|a=(sendonly|sendrecv|recvonly)/.test(l));
  note(`offer: ${audio.map((l) => l.trim()).join(' | ')}`);
  const deadline = Date.now() + 10_000;
  while (!(await pageListen(page, SPEAKER_HZ))) {
    if (Date.now() > deadline) throw new Error('no audio track received');
    await wait(100);
  }
  return page;
}

const pageNow = (page: Page) =>
  page.evaluate('performance.timeOrigin + performance.now()') as Promise<number>;

async function firstAbove(page: Page, since: number, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const at = (await page.evaluate(`window.__kvmAudio.firstAbove(${since}, ${DETECT})`)) as
      number | null;
    if (at !== null) return at;
    if (Date.now() > deadline) return null;
    await wait(20);
  }
}

/**
 * Waits up to `timeoutMs` for 100 ms of the received sound under SILENCE_RMS (at least 10 of
 * the page's blocks): the proof that no earlier tone still sounds. Answers whether it came.
 */
async function pageSilence(page: Page, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const l = (await page.evaluate('window.__kvmAudio.level(100)')) as {
      blocks: number;
      rms: number;
    };
    if (l.blocks >= 10 && l.rms < SILENCE_RMS) return true;
    if (Date.now() > deadline) return false;
    await wait(20);
  }
}

/**
 * The guest's tone to the page, SAMPLES times, each at its own frequency (speakerHz). A sample
 * counts only when it is provably its own: silence in the page before its command, and its
 * first block at its frequency after the command was written (the page cannot hear a
 * frequency the guest was not yet asked to play). Others are `unattributed`, with the reason
 * in the notes.
 */
async function speakerLatency(page: Page, t: Target, offset: number) {
  const fromTone: number[] = [];
  const fromCommand: number[] = [];
  let missed = 0;
  let unattributed = 0;
  const said: string[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    const hz = speakerHz(i);
    await page.evaluate(`window.__kvmAudio.listen(${hz})`);
    const silent = await pageSilence(page, 3_000);
    const since = await pageNow(page);
    const { start, command } = await t.tone(hz, 1000);
    const at = await firstAbove(page, since, 5_000);
    await t.toneDone();
    if (!silent) {
      unattributed += 1;
      said.push(`${hz} Hz: not silent before`);
    } else if (at === null) {
      missed += 1;
      said.push(`${hz} Hz: missed`);
    } else if (at - offset < command) {
      unattributed += 1;
      said.push(`${hz} Hz: heard ${round(command - (at - offset))} ms before its command`);
    } else {
      fromTone.push(at - offset - start);
      fromCommand.push(at - offset - command);
      said.push(`${hz} Hz: ${round(at - offset - start)} ms`);
    }
  }
  note(`audio latency: ${said.join(', ')} (${missed} missed, ${unattributed} unattributed)`);
  return { fromTone, fromCommand, missed, unattributed };
}

/**
 * The page's microphone to the guest, SAMPLES times, each at its own frequency (micHz). A
 * sample counts only when it is provably its own: the guest's detector recorded silence first
 * (its `hear start` RMS), detected nothing before the page's tone was on, and printed `heard`
 * for this sample's frequency after that. Others are `unattributed`, the reason in the notes.
 */
async function micLatency(page: Page, t: Target, offset: number) {
  const times: number[] = [];
  let missed = 0;
  let unattributed = 0;
  const said: string[] = [];
  for (let i = 0; i < SAMPLES; i += 1) {
    const hz = micHz(i);
    await page.evaluate('window.__kvmAudio.micTone(0)');
    const { rms } = await t.armHear(hz);
    const early = await t.heardEarly();
    const on = (await page.evaluate(`window.__kvmAudio.micTone(${hz})`)) as number;
    let heard: number | null = null;
    try {
      heard = await t.heard(hz, 5_000);
    } catch (err) {
      note(`mic sample ${i}: ${String(err).slice(0, 300)}`);
    }
    await page.evaluate('window.__kvmAudio.micTone(0)');
    await t.hearDone();
    if (rms >= SILENCE_RMS) {
      unattributed += 1;
      said.push(`${hz} Hz: not silent before (${rms})`);
    } else if (early) {
      unattributed += 1;
      said.push(`${hz} Hz: detected before the tone`);
    } else if (heard === null) {
      missed += 1;
      said.push(`${hz} Hz: missed`);
    } else {
      times.push(heard - (on - offset));
      said.push(`${hz} Hz: ${round(heard - (on - offset))} ms`);
    }
  }
  note(`mic latency: ${said.join(', ')} (${missed} missed, ${unattributed} unattributed)`);
  return { times, missed, unattributed };
}

/** Runs of low blocks of 20 ms or more in `seconds` of a steady tone; with the CPU meanwhile. */
async function dropouts(page: Page, t: Target) {
  await page.evaluate(`window.__kvmAudio.listen(${SPEAKER_HZ})`);
  const since = await pageNow(page);
  const source = t.recordSource?.(DROPOUT_S + 3);
  await t.tone(SPEAKER_HZ, (DROPOUT_S + 2) * 1000);
  const first = await firstAbove(page, since, 5_000);
  if (first === null) throw new Error('the long tone never reached the page');
  const from = first + 500;
  const to = from + DROPOUT_S * 1000;
  while ((await pageNow(page)) < to + 200) await wait(250);
  const b = (await page.evaluate(`window.__kvmAudio.since(${from})`)) as {
    t: number[];
    short: number[];
  };
  const levels = b.short.filter((_, i) => b.t[i]! <= to);
  const { gaps, typical, longest } = countGaps(levels, GAP_SHARE, GAP_BLOCKS);
  const expected = (DROPOUT_S * 48_000) / 256;
  note(
    `dropouts: ${gaps} in ${levels.length} blocks (${round(expected, 0)} expected), median level ${round(typical, 3)}, longest low run ${longest} blocks`,
  );
  await t.toneDone();
  let sourceGaps = NaN;
  if (source) {
    // the same window of the source: 0.5 s after the tone's first block there
    const all = await source;
    const start = all.findIndex((l) => l >= DETECT);
    const window = all.slice(start + 94, start + 94 + Math.round(expected));
    const s = countGaps(window, GAP_SHARE, GAP_BLOCKS);
    sourceGaps = s.gaps;
    note(
      `at the source (the sink's monitor): ${s.gaps} gaps in ${window.length} blocks, longest low run ${s.longest} blocks`,
    );
  }
  return { gaps, blocks: levels.length, typical, longest, sourceGaps };
}

/** The server's CPU with the one listener while the guest plays a tone, over CPU_MS. */
async function listenerCpu(page: Page, t: Target): Promise<CpuUse> {
  await page.evaluate(`window.__kvmAudio.listen(${SPEAKER_HZ})`);
  const since = await pageNow(page);
  await t.tone(SPEAKER_HZ, CPU_MS + 2_000);
  if ((await firstAbove(page, since, 5_000)) === null)
    throw new Error('no tone for the CPU window');
  const cpu = await cpuPercent(() => t.cpuPids(), CPU_MS);
  await t.toneDone();
  await wait(300);
  return cpu;
}

async function main(): Promise<Record<string, number | boolean>> {
  const speed = machineSpeed();
  note(`machine: ${JSON.stringify(speed)}`);
  const t = SHORT ? await testbedTarget() : await qemuTarget();
  const browser = await Browser.launch();
  try {
    const idle = await cpuPercent(() => t.cpuPids(), CPU_MS);
    const page = await openListener(browser, t, true);
    const { offset, bound } = await clockOffset(() => pageNow(page));
    note(`page clock ${round(offset, 2)} ms ahead (within ${round(bound, 2)})`);
    // the encoder's first packets and the jitter buffer settle
    await wait(1500);
    const speaker = await speakerLatency(page, t, offset);
    const mic = await micLatency(page, t, offset);
    await page.evaluate('window.__kvmAudio.unwatch()');
    await page.close();
    // one listener: a listen-only watch, with no microphone decoder running (it stops 2 s after
    // the last packet of the page above)
    const listener = await openListener(browser, t, false);
    await wait(2500);
    const cpu = await listenerCpu(listener, t);
    const drop = await dropouts(listener, t);
    await listener.evaluate('window.__kvmAudio.unwatch()');
    return {
      ...runMarks(),
      audio_latency_ms: round(median(speaker.fromTone)),
      audio_latency_p95_ms: round(percentile(speaker.fromTone, 95)),
      audio_latency_from_command_ms: round(median(speaker.fromCommand)),
      audio_latency_samples: speaker.fromTone.length,
      audio_latency_missed: speaker.missed,
      audio_latency_unattributed: speaker.unattributed,
      mic_latency_ms: round(median(mic.times)),
      mic_latency_p95_ms: round(percentile(mic.times, 95)),
      mic_latency_samples: mic.times.length,
      mic_latency_missed: mic.missed,
      mic_latency_unattributed: mic.unattributed,
      audio_dropouts_60s: drop.gaps,
      ...(Number.isNaN(drop.sourceGaps) ? {} : { audio_dropouts_source_60s: drop.sourceGaps }),
      audio_dropout_window_s: DROPOUT_S,
      audio_dropout_blocks_samples: drop.blocks,
      audio_level: round(drop.typical, 3),
      cpu_pct_audio: round(cpu.total - cpu.soundServer, 2),
      cpu_pct_sound_server: round(cpu.soundServer, 2),
      cpu_pct_no_listener: round(idle.total - idle.soundServer, 2),
      clock_offset_ms: round(offset, 2),
      ...speed,
      ...(({ calibration_ms, calibration_cpu_ms }) => ({
        calibration_end_ms: calibration_ms,
        calibration_cpu_end_ms: calibration_cpu_ms,
      }))(machineSpeed()),
    };
  } finally {
    await browser.close();
    await t.close();
  }
}

if (process.argv[1]?.endsWith('audio.mjs')) {
  const figures = await main();
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}
