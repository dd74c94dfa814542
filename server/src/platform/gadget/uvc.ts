/**
 * The gadget's webcam (issue 24): the UVC function on configfs (kernel
 * Documentation/ABI/testing/configfs-usb-gadget-uvc, Documentation/usb/gadget_uvc.rst, 6.1), and
 * finding the video node the kernel makes for it when the gadget binds. The frames come from
 * our own program (server/native/uvc-stream), fed by services/camera.
 *
 * Layout (one format, one frame size, as the program serves it):
 *   functions/uvc.usb0/
 *     streaming_maxpacket                     3072 (high speed: 3 x 1024 bytes a microframe)
 *     control/header/h                        linked from control/class/{fs,ss}/h
 *     streaming/uncompressed/u/<w>x<h>/       wWidth, wHeight, dwFrameInterval (one a line),
 *                                             dwDefaultFrameInterval, dwMaxVideoFrameBufferSize
 *     streaming/header/h                      with a link h/u → uncompressed/u, linked from
 *                                             streaming/class/{fs,hs,ss}/h
 * The kernel's default processing unit (id 2, brightness) and camera terminal stay as made.
 *
 * Facts measured in the device VM (Debian 6.1.0-56, dummy_hcd): the tree above is accepted; the
 * function has no `streaming_bulk` in 6.1 (isochronous only), and dummy_hcd's UDC has no
 * isochronous endpoint, so a bind with it fails ("uvc: Unable to allocate streaming EP", EINVAL
 * on `UDC`); the platform then binds without it (OPTIONAL_FUNCTIONS) and says so.
 */
import { readdir, readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { readAttr, removeGroup, type GadgetFs } from './configfs';

export const UVC_FN = 'uvc.usb0';
const CONFIG = 'configs/c.1';

/** What the webcam offers the remote computer: YUYV 4:2:2 at one size. */
export interface UvcSpec {
  width: number;
  height: number;
  /** Frame rates offered, highest first (the first is the default). */
  fps: number[];
  /** streaming_maxpacket: 1024, 2048 or 3072 (high-bandwidth isochronous). */
  maxPacket: number;
}

export const DEFAULT_UVC_SPEC: UvcSpec = {
  width: 640,
  height: 480,
  fps: [30, 15],
  maxPacket: 3072,
};

/** Bytes of one YUYV frame. */
export function uvcFrameBytes(spec: Pick<UvcSpec, 'width' | 'height'>): number {
  return spec.width * spec.height * 2;
}

/** 100 ns units, as UVC counts frame intervals. */
export function frameInterval(fps: number): number {
  return Math.round(10_000_000 / fps);
}

const FORMAT = 'u';
const HEADER = 'h';

function frameName(spec: UvcSpec): string {
  return `${spec.width}x${spec.height}`;
}

/** The UVC function, linked into the configuration; nothing of it is left if this throws. */
export async function makeUvcFunction(
  fs: GadgetFs,
  gadgetDir: string,
  spec: UvcSpec,
): Promise<void> {
  const dir = join(gadgetDir, 'functions', UVC_FN);
  try {
    await fs.mkdir(dir);
    await fs.writeFile(join(dir, 'streaming_maxpacket'), String(spec.maxPacket));
    const ctrl = join(dir, 'control');
    await fs.mkdir(join(ctrl, 'header', HEADER));
    for (const speed of ['fs', 'ss']) {
      await fs.symlink(join(ctrl, 'header', HEADER), join(ctrl, 'class', speed, HEADER));
    }
    const st = join(dir, 'streaming');
    const format = join(st, 'uncompressed', FORMAT);
    const frame = join(format, frameName(spec));
    await fs.mkdir(frame);
    await fs.writeFile(join(frame, 'wWidth'), String(spec.width));
    await fs.writeFile(join(frame, 'wHeight'), String(spec.height));
    const intervals = spec.fps.map(frameInterval);
    await fs.writeFile(join(frame, 'dwFrameInterval'), `${intervals.join('\n')}\n`);
    await fs.writeFile(join(frame, 'dwDefaultFrameInterval'), String(intervals[0]));
    await fs.writeFile(join(frame, 'dwMaxVideoFrameBufferSize'), String(uvcFrameBytes(spec)));
    const bits = uvcFrameBytes(spec) * 8;
    await fs.writeFile(join(frame, 'dwMinBitRate'), String(bits * Math.min(...spec.fps)));
    await fs.writeFile(join(frame, 'dwMaxBitRate'), String(bits * Math.max(...spec.fps)));
    await fs.mkdir(join(st, 'header', HEADER));
    await fs.symlink(format, join(st, 'header', HEADER, FORMAT));
    for (const speed of ['fs', 'hs', 'ss']) {
      await fs.symlink(join(st, 'header', HEADER), join(st, 'class', speed, HEADER));
    }
    await fs.symlink(dir, join(gadgetDir, CONFIG, UVC_FN));
  } catch (err) {
    await removeUvcFunction(fs, gadgetDir).catch(() => undefined);
    throw err;
  }
}

/**
 * Takes the UVC function out of the configuration and removes it, in the order configfs
 * allows: the class links, the header's format link, the headers, the frames, the formats, the
 * function (a user-made group cannot go while something links to it).
 */
export async function removeUvcFunction(fs: GadgetFs, gadgetDir: string): Promise<void> {
  const dir = join(gadgetDir, 'functions', UVC_FN);
  const link = join(gadgetDir, CONFIG, UVC_FN);
  if (await fs.exists(link)) await fs.unlink(link);
  if (!(await fs.exists(dir))) return;
  const quiet = (p: Promise<void>) => p.catch(() => undefined);
  for (const part of ['control', 'streaming']) {
    for (const speed of ['fs', 'hs', 'ss']) {
      const classDir = join(dir, part, 'class', speed);
      for (const e of await listNames(fs, classDir)) await quiet(fs.unlink(join(classDir, e)));
    }
  }
  for (const part of ['control', 'streaming']) {
    const headers = join(dir, part, 'header');
    for (const h of await listNames(fs, headers)) {
      for (const e of await fs.readdir(join(headers, h)).catch(() => [])) {
        if (e.kind === 'link') await quiet(fs.unlink(join(headers, h, e.name)));
      }
      await quiet(fs.rmdir(join(headers, h)));
    }
  }
  for (const kind of ['uncompressed', 'mjpeg']) {
    const formats = join(dir, 'streaming', kind);
    for (const f of await listNames(fs, formats)) {
      for (const e of await fs.readdir(join(formats, f)).catch(() => [])) {
        if (e.kind === 'dir') await quiet(fs.rmdir(join(formats, f, e.name)));
      }
      await quiet(fs.rmdir(join(formats, f)));
    }
  }
  await removeGroup(fs, dir);
}

async function listNames(fs: GadgetFs, dir: string): Promise<string[]> {
  return (await fs.readdir(dir).catch(() => [])).map((e) => e.name);
}

/** The function's interface numbers (read-only attributes the kernel fills at bind). */
export async function uvcInterfaces(
  fs: GadgetFs,
  gadgetDir: string,
): Promise<{ control: number; streaming: number } | null> {
  const dir = join(gadgetDir, 'functions', UVC_FN);
  const control = Number(await readAttr(fs, join(dir, 'control', 'bInterfaceNumber')));
  const streaming = Number(await readAttr(fs, join(dir, 'streaming', 'bInterfaceNumber')));
  if (!Number.isInteger(control) || !Number.isInteger(streaming)) return null;
  return { control, streaming };
}

/**
 * The UVC gadget's video node: the `<sys>/class/video4linux/videoN` whose device is a gadget
 * (`.../<udc>/gadget*`) of the UDC bound, and that is not a capture device of the host side
 * (uvcvideo's nodes hang under a USB interface). Null when there is none (not bound yet).
 */
export async function findUvcNode(sys: string, dev: string, udc: string): Promise<string | null> {
  const root = join(sys, 'class', 'video4linux');
  let names: string[];
  try {
    names = (await readdir(root)).filter((n) => /^video\d+$/.test(n));
  } catch {
    return null;
  }
  names.sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)));
  for (const name of names) {
    let target: string;
    try {
      target = await realpath(join(root, name, 'device'));
    } catch {
      continue;
    }
    const parts = target.split('/');
    const last = parts.at(-1) ?? '';
    if (!last.startsWith('gadget') || !parts.includes(udc)) continue;
    const uevent = await readFile(join(root, name, 'uevent'), 'utf8').catch(() => '');
    const devname = /^DEVNAME=(.+)$/m.exec(uevent)?.[1]?.trim() ?? name;
    return join(dev, devname);
  }
  return null;
}
