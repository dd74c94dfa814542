/**
 * The VM's monitor follows an applied EDID at its next reset: QEMU restarts with the EDID's mode,
 * the guest's bochs framebuffer boots at it and the video source reports it. Slow (two guest
 * boots under TCG): one test. Prints `edid_to_resolution_s` (apply → stream at the new size).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EDID_PRESETS, edidPreferredMode, parseEdidHex } from '@kvm/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guestImagePaths } from '../../platform/qemu/guest';
import { QemuDisplay } from './qemu';
import { QemuMachine, vgaDevice } from '../../platform/qemu/machine';
import { QemuMsd } from '../msd/qemu';
import { QemuPowerButton } from '../../platform/qemu/power';
import { ensureGuestImage, readSerial, until } from '../../platform/qemu/test-support';
import { QemuVideo } from '../video/qemu';

let dir: string;
let machine: QemuMachine | null = null;
let video: QemuVideo | null = null;
let msd: QemuMsd | null = null;

beforeAll(async () => {
  ensureGuestImage();
  dir = await mkdtemp(join(tmpdir(), 'kvm-display-'));
}, 120_000);
afterAll(async () => {
  await msd?.dispose();
  await video?.dispose();
  await machine?.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe('vgaDevice', () => {
  it('sizes VGA memory for three 32-bit frames, at least 16 MiB', () => {
    expect(vgaDevice(null)).toBe('VGA,id=video0,edid=on,xres=1024,yres=768,vgamem_mb=16');
    expect(vgaDevice({ width: 1920, height: 1080, hz: 60 })).toBe(
      'VGA,id=video0,edid=on,xres=1920,yres=1080,refresh_rate=60000,vgamem_mb=32',
    );
    expect(vgaDevice({ width: 3840, height: 2160, hz: 30 })).toContain('vgamem_mb=128');
  });
});

describe('QemuDisplay', () => {
  it('the 1920x1080 EDID reaches the guest at the next reset; virtual media survives', async () => {
    const m = new QemuMachine({ runDir: join(dir, 'run'), boot: 'iso' });
    machine = m;
    const v = new QemuVideo(m);
    video = v;
    const media = new QemuMsd(m, undefined, { usbBus: 'xhci.0' });
    msd = media;
    const display = new QemuDisplay(m, dir);
    await display.init();
    await media.init();
    await v.init();
    await v.startCapture(() => undefined, 30);
    await m.init();
    await until(
      'guest ready',
      async () => (await readSerial(m.paths.serial)).includes('guest ready'),
      90_000,
    );
    await until(
      '1024x768',
      () => v.getState().width === 1024 && v.getState().height === 768,
      30_000,
    );
    expect(display.pending()).toBe(false);
    await media.connectImage({ path: guestImagePaths().rescueIso, cdrom: true, rw: false });

    const preset = EDID_PRESETS.find((p) => p.key === 'E1920x1080')!;
    const bytes = parseEdidHex(preset.content)!;
    const t0 = performance.now();
    await display.apply(Buffer.from(bytes), edidPreferredMode(bytes)!);
    expect(display.pending()).toBe(true);
    expect(display.applies).toBe('power_cycle');
    // persisted: a restarted server's VM starts with it
    expect(JSON.parse(await readFile(join(dir, 'system', 'qemu-display.json'), 'utf8'))).toEqual({
      width: 1920,
      height: 1080,
      hz: 60,
    });
    const pidBefore = m.pid;
    await new QemuPowerButton(m).reset(0);
    expect(m.pid).not.toBe(pidBefore);
    expect(display.pending()).toBe(false);
    await until(
      '1920x1080',
      () => v.getState().online && v.getState().width === 1920 && v.getState().height === 1080,
      120_000,
    );
    const seconds = (performance.now() - t0) / 1000;
    console.log(`edid_to_resolution_s=${seconds.toFixed(2)}`);
    expect(display.current()).toEqual({ width: 1920, height: 1080, hz: 60 });
    // the CD-ROM medium was inserted again into the new QEMU
    const blocks = (await m.command('query-block' as 'query-status')) as unknown as Array<{
      device: string;
      inserted?: { file: string };
    }>;
    expect(blocks.find((b) => b.device === 'cd0')?.inserted?.file).toBe(
      guestImagePaths().rescueIso,
    );
  }, 300_000);
});
