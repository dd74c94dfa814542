/**
 * The ALSA sound driver on the gadget's UAC2 card (issue 24): the function as configfs takes it,
 * the card as the kernel makes and removes it with the bind (test-support's fixture kernel), a
 * UDC that refuses the function, and what the driver gives the audio hub and the state.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GadgetPlatform } from '../../platform/gadget/platform';
import { FixtureKernel, type FixtureOptions } from '../../platform/gadget/test-support';
import { AlsaAudio, alsaCaptureArgs, alsaPlaybackArgs } from './alsa';

const G = 'config/usb_gadget/kvm';
const UAC2 = { channels: 2, rate: 48000, sampleBytes: 2 as const };

let kernel: FixtureKernel | null = null;
let platform: GadgetPlatform | null = null;
let driver: AlsaAudio | null = null;
let tmp: string | null = null;

afterEach(async () => {
  await driver?.dispose();
  driver = null;
  await platform?.dispose();
  platform = null;
  await kernel?.cleanup();
  kernel = null;
  if (tmp) await rm(tmp, { recursive: true, force: true });
  tmp = null;
});

/** The platform with the UAC2 function and the driver on its card, as the factory makes them. */
async function start(
  opts: FixtureOptions = {},
  before?: (k: FixtureKernel) => void | Promise<void>,
): Promise<{ k: FixtureKernel; p: GadgetPlatform; d: AlsaAudio; changes: () => number }> {
  kernel = await FixtureKernel.make(opts);
  await before?.(kernel);
  const p = new GadgetPlatform({ ...kernel.options(), uac2: UAC2 });
  platform = p;
  const d = new AlsaAudio({
    card: 'UAC2Gadget',
    device: 0,
    proc: join(kernel.root, 'proc', 'asound'),
    gadget: {
      soundOnline: () => p.soundOnline(),
      soundProblem: () => p.soundProblem(),
      onChange: (l) => {
        const a = p.onChange(l);
        const b = p.onRebuilt(l);
        return () => {
          a();
          b();
        };
      },
    },
  });
  driver = d;
  let n = 0;
  d.onChange(() => (n += 1));
  await d.init();
  await p.init();
  return { k: kernel, p, d, changes: () => n };
}

describe('the gadget UAC2 function', () => {
  it('is made 48 kHz stereo 16-bit both ways, linked, and its card serves capture and playback', async () => {
    const { k, p, d } = await start();
    for (const side of ['p', 'c']) {
      expect(await k.read(`${G}/functions/uac2.usb0/${side}_chmask`)).toBe('3');
      expect(await k.read(`${G}/functions/uac2.usb0/${side}_srate`)).toBe('48000');
      expect(await k.read(`${G}/functions/uac2.usb0/${side}_ssize`)).toBe('2');
    }
    expect(await k.exists(join(k.root, G, 'configs/c.1/uac2.usb0'))).toBe(true);
    expect(p.problems()).toEqual([]);
    expect(p.soundOnline()).toBe(true);
    expect(d.unavailable).toBeNull();
    expect(d.capture()).toEqual({
      args: ['-f', 'alsa', '-channels', '2', '-sample_rate', '48000', '-i', 'hw:UAC2Gadget,0'],
    });
    expect(d.playback()).toEqual({
      args: ['-c:a', 'pcm_s16le', '-ar', '48000', '-ac', '2', '-f', 'alsa', 'hw:UAC2Gadget,0'],
    });
  });

  it('a UDC without isochronous endpoints: the gadget binds without the sound, and says so', async () => {
    const { k, p, d } = await start({}, (k) => {
      k.isoless = true;
    });
    // the keyboard, mice and drive are bound all the same
    expect(p.connected()).toBe(true);
    expect(p.hidNodes().keyboard).not.toBeNull();
    expect(p.msdOnline()).toBe(true);
    expect(await k.exists(join(k.root, G, 'functions/uac2.usb0'))).toBe(false);
    expect(p.problems()).toEqual([
      'The function uac2.usb0 was left out (no sound): dummy_udc.0 did not bind the gadget with ' +
        'it (ENODEV: UDC dummy_udc.0: no isochronous endpoint); it bound without it',
    ]);
    expect(p.soundOnline()).toBe(false);
    expect(d.capture()).toBeNull();
    expect(d.playback()).toBeNull();
    expect(d.unavailable).toBe(p.problems()[0]);
  });

  it('no usb_f_uac2 module: the rest of the gadget is made and bound, the problem named', async () => {
    const { p, d } = await start({}, (k) => k.removeModule('usb_f_uac2'));
    expect(p.connected()).toBe(true);
    expect(p.problems()).toEqual(['Kernel module usb_f_uac2 is missing: no sound']);
    expect(d.unavailable).toBe('Kernel module usb_f_uac2 is missing: no sound');
    expect(d.capture()).toBeNull();
  });

  it('the cable pulled: no card, no capture, the state told; plugged back: the same device again', async () => {
    const { k, p, d, changes } = await start();
    const before = changes();
    await p.setConnected(false);
    expect(await k.exists(k.soundCard)).toBe(false);
    expect(d.capture()).toBeNull();
    expect(d.playback()).toBeNull();
    expect(d.unavailable).toBe('The gadget is not bound to a UDC');
    expect(changes()).toBeGreaterThan(before);
    const unplugged = changes();
    await p.setConnected(true);
    expect(d.unavailable).toBeNull();
    expect(d.capture()?.args.at(-1)).toBe('hw:UAC2Gadget,0');
    expect(changes()).toBeGreaterThan(unplugged);
  });

  it('a rebuild (mouse mode) re-creates the card; capture is there again after it', async () => {
    const { k, p, d } = await start();
    let sawMissing = false;
    p.onRebuilding(async () => {
      sawMissing = true;
    });
    await p.setMouseMode('relative');
    expect(sawMissing).toBe(true);
    expect(await k.exists(k.soundCard)).toBe(true);
    expect(await k.exists(join(k.root, G, 'configs/c.1/uac2.usb0'))).toBe(true);
    expect(d.capture()?.args.at(-1)).toBe('hw:UAC2Gadget,0');
  });

  it('a card the kernel lost while the gadget is bound: unavailable names it', async () => {
    const { k, d } = await start();
    await rm(k.soundCard, { recursive: true });
    expect(d.capture()).toBeNull();
    expect(d.unavailable).toMatch(
      /^The gadget's sound card UAC2Gadget is missing \(not in .*asound\)$/,
    );
  });
});

describe('AlsaAudio on a card of its own (no gadget)', () => {
  it('follows the card in procfs', async () => {
    tmp = await mkdtemp(join(tmpdir(), 'alsa-'));
    driver = new AlsaAudio({ card: 'Dongle', device: 1, proc: tmp, gadget: null });
    await driver.init();
    expect(driver.capture()).toBeNull();
    expect(driver.unavailable).toBe(`The sound card Dongle is missing (not in ${tmp})`);
    await mkdir(join(tmp, 'Dongle'));
    expect(driver.capture()?.args).toEqual(alsaCaptureArgs('hw:Dongle,1'));
    expect(driver.playback()?.args).toEqual(alsaPlaybackArgs('hw:Dongle,1'));
    expect(driver.kind).toBe('alsa');
    expect(driver.simulated).toBe(false);
  });
});
