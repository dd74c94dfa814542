import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readProcArgv, waitForExit } from '../../process/supervisor';
import { toneLevel, s16 } from '../../drivers/audio/tone';
import {
  MIC_SINK,
  pulseArgs,
  pulseCaptureArgs,
  pulseEnv,
  pulsePaths,
  QemuPulse,
  SPEAKER_SINK,
} from './pulse';
import { QemuMachine } from './machine';
import { ensureGuestImage, processesMentioning, readSerial, until } from './test-support';

let dir: string;
const children = new Set<ChildProcess>();
const audios = new Set<QemuPulse>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvm-qemu-audio-'));
});
afterEach(async () => {
  for (const c of children) c.kill('SIGKILL');
  children.clear();
  for (const a of audios) await a.stop();
  audios.clear();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function newAudio(runDir: string): QemuPulse {
  const a = new QemuPulse({ runDir, backoff: { initialMs: 100 } });
  audios.add(a);
  return a;
}

function ffmpeg(args: string[]): ChildProcess {
  const c = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(c);
  return c;
}

/** Plays `hz` for `seconds` with the given pulse output arguments. */
function playTone(hz: number, seconds: number, output: string[]): ChildProcess {
  return ffmpeg([
    ...['-re', '-f', 'lavfi', '-i', `aevalsrc=0.5*sin(2*PI*${hz}*t):s=48000:d=${seconds}`],
    ...output,
  ]);
}

/**
 * Records s16le stereo from the given pulse input arguments; `at(t)` answers the PCM since
 * `t` (performance.now()), and `first(hz)` when `hz` was first present in a 20 ms window.
 */
function record(input: string[]) {
  const c = ffmpeg([...input, '-f', 's16le', 'pipe:1']);
  const chunks: Array<{ t: number; pcm: Buffer }> = [];
  let pending = Buffer.alloc(0);
  c.stdout?.on('data', (b: Buffer) => {
    pending = Buffer.concat([pending, b]);
    // 20 ms windows: 960 frames of 4 bytes
    while (pending.length >= 3840) {
      chunks.push({ t: performance.now(), pcm: pending.subarray(0, 3840) });
      pending = pending.subarray(3840);
    }
  });
  return {
    since: (t: number) => Buffer.concat(chunks.filter((c) => c.t >= t).map((c) => c.pcm)),
    first: (hz: number, after: number) =>
      chunks.find((c) => c.t >= after && toneLevel(s16(c.pcm), 48000, 2, hz) > 0.1)?.t ?? null,
    stop: () => c.kill('SIGKILL'),
  };
}

describe('PulseAudio of a data folder', () => {
  it('starts, passes sound through both sinks, is cleaned up, restarts after a crash', async () => {
    const runDir = join(dir, 'alone');
    const audio = newAudio(runDir);
    expect(audio.capture()).toBeNull();
    await audio.start();
    expect(audio.unavailable).toBeNull();
    const pid = audio.pid!;
    expect(existsSync(audio.paths.socket)).toBe(true);
    expect((await readProcArgv(pid))?.join(' ')).toContain(`socket=${audio.paths.socket}`);

    // the microphone's way: playback() into the mic sink, heard on its monitor (the VM's input)
    const mic = record([
      ...pulseCaptureArgs(audio.paths.socket).slice(0, -1),
      `${MIC_SINK}.monitor`,
    ]);
    playTone(700, 3, audio.playback()!.args);
    await until('700 Hz on the mic sink', () => mic.first(700, 0), 10_000);
    mic.stop();

    // the speaker's way: what the VM plays into the speaker sink comes out of capture()
    const speaker = record(audio.capture()!.args);
    playTone(1000, 3, [
      '-f',
      'pulse',
      '-server',
      `unix:${audio.paths.socket}`,
      '-device',
      SPEAKER_SINK,
      'vm',
    ]);
    await until('1000 Hz from capture()', () => speaker.first(1000, 0), 10_000);
    const pcm = s16(speaker.since(0));
    expect(toneLevel(pcm, 48000, 2, 700)).toBeLessThan(0.05);
    speaker.stop();

    // killed: started again on the same socket
    process.kill(pid, 'SIGKILL');
    await until('a new pulseaudio', () => audio.running && audio.pid !== pid && audio.pid, 10_000);
    await until('its socket', () => audio.capture() !== null && existsSync(audio.paths.socket));
    // and it works (its socket file was the dead one's: PulseAudio replaces a stale one)
    const again = record([
      ...pulseCaptureArgs(audio.paths.socket).slice(0, -1),
      `${MIC_SINK}.monitor`,
    ]);
    playTone(700, 3, audio.playback()!.args);
    await until('700 Hz after the restart', () => again.first(700, 0), 10_000);
    again.stop();

    const last = audio.pid!;
    await audio.stop();
    expect(await waitForExit(last, 5000)).toBe(true);
    expect(existsSync(audio.paths.socket)).toBe(false);
    expect(existsSync(audio.paths.home)).toBe(false);
    expect(existsSync(audio.paths.pidfile)).toBe(false);
    expect(audio.capture()).toBeNull();
    expect(audio.playback()).toBeNull();
  }, 60_000);

  it('kills the PulseAudio a crashed server left behind', async () => {
    const runDir = join(dir, 'stale');
    const paths = pulsePaths(runDir);
    await mkdir(paths.home, { recursive: true });
    const stale = spawn('pulseaudio', pulseArgs(paths), {
      env: pulseEnv(paths),
      stdio: 'ignore',
      detached: true,
    });
    children.add(stale);
    await until('the stale socket', () => existsSync(paths.socket), 10_000);
    await writeFile(paths.pidfile, `${stale.pid}\n`);
    const audio = newAudio(runDir);
    await audio.start();
    expect(await waitForExit(stale.pid!, 5000)).toBe(true);
    expect(audio.pid).not.toBe(stale.pid);
    expect(await processesMentioning(paths.socket)).toEqual([audio.pid]);
  }, 30_000);
});

describe('the VM with its sound card', () => {
  let machine: QemuMachine | null = null;
  let audio: QemuPulse;
  let serial = '';

  const lines = async () => (await readSerial(serial)).replace(/\r/g, '');
  /** Types a line on the serial shell; the socket stays open a moment (a close drops input). */
  const type = async (line: string) => {
    const sock = connect(machine!.paths.serialSock);
    await new Promise<void>((resolve, reject) => {
      sock.once('connect', resolve);
      sock.once('error', reject);
    });
    sock.write(`${line}\n`);
    await new Promise((r) => setTimeout(r, 300));
    sock.destroy();
  };
  const waitSerial = async (from: number, re: RegExp, timeoutMs: number) =>
    until(`${re} on the serial line`, async () => re.exec((await lines()).slice(from)), timeoutMs);

  beforeAll(async () => {
    ensureGuestImage();
    const runDir = join(dir, 'vm');
    audio = new QemuPulse({ runDir });
    await audio.start();
    machine = new QemuMachine({ runDir, audio: () => audio.backend() });
    serial = machine.paths.serial;
    await machine.init();
    await waitSerial(0, /guest ready/, 90_000);
  }, 180_000);
  afterAll(async () => {
    await machine?.dispose();
    await audio?.stop();
  });

  it("the guest's tone reaches capture(); the host's tone reaches the guest; silence is silence", async () => {
    // guest -> host, with the delay from `tone start` on the serial line to the tone on the host
    const speaker = record(audio.capture()!.args);
    await new Promise((r) => setTimeout(r, 500));
    let from = (await lines()).length;
    const typed = type('tone 1000 2');
    // polled every 2 ms (until() polls every 25 ms): the figure below is a delay
    const deadline = performance.now() + 30_000;
    while (!/tone start 1000/.test((await lines()).slice(from))) {
      if (performance.now() > deadline) throw new Error('no tone start');
      await new Promise((r) => setTimeout(r, 2));
    }
    const toneStart = performance.now();
    const heardAt = await until('1000 Hz on the host', () => speaker.first(1000, 0), 10_000);
    await typed;
    await waitSerial(from, /tone end/, 30_000);
    speaker.stop();
    console.log(`guest tone start -> host capture: ${Math.round(heardAt - toneStart)} ms`);

    // host -> guest: a tone into the microphone sink is heard by the guest's `hear`
    from = (await lines()).length;
    await type('hear 700 15');
    // hear drops its first 100 ms of capture
    await new Promise((r) => setTimeout(r, 500));
    const playAt = performance.now();
    playTone(700, 5, audio.playback()!.args);
    await waitSerial(from, /heard 700/, 20_000);
    console.log(`host ffmpeg start -> guest heard: ${Math.round(performance.now() - playAt)} ms`);
    await waitSerial(from, /hear end/, 5000);
    for (const c of children) c.kill('SIGKILL');

    // nothing plays: listen finds no tone
    await new Promise((r) => setTimeout(r, 300));
    from = (await lines()).length;
    await type('listen 1');
    const m = await waitSerial(from, /listen (\d+) ([\d.]+)/, 30_000);
    expect(Number(m[2])).toBeLessThan(0.001);
    expect(m[1]).toBe('0');
  }, 120_000);
});
