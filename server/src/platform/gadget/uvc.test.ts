import { mkdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GadgetPlatform } from './platform';
import { FixtureKernel } from './test-support';
import { DEFAULT_UVC_SPEC, findUvcNode, frameInterval, uvcFrameBytes, UVC_FN } from './uvc';

const G = 'config/usb_gadget/kvm';
const F = `${G}/functions/${UVC_FN}`;

let kernel: FixtureKernel | null = null;
let platform: GadgetPlatform | null = null;

afterEach(async () => {
  await platform?.dispose();
  platform = null;
  await kernel?.cleanup();
  kernel = null;
});

async function start(isoless = false): Promise<{ k: FixtureKernel; p: GadgetPlatform }> {
  kernel = await FixtureKernel.make();
  kernel.isoless = isoless;
  platform = new GadgetPlatform({ ...kernel.options(), uvc: DEFAULT_UVC_SPEC });
  await platform.init();
  return { k: kernel, p: platform };
}

async function link(k: FixtureKernel, rel: string): Promise<string> {
  const path = join(k.root, rel);
  return resolve(path, '..', await readlink(path));
}

describe('the UVC function (webcam) of the gadget', () => {
  it('is made with one YUYV frame size, its headers linked for every speed, and bound', async () => {
    const { k, p } = await start();
    const frame = `${F}/streaming/uncompressed/u/640x480`;
    expect(await k.read(`${F}/streaming_maxpacket`)).toBe('3072');
    expect(await k.read(`${frame}/wWidth`)).toBe('640');
    expect(await k.read(`${frame}/wHeight`)).toBe('480');
    expect(await k.read(`${frame}/dwFrameInterval`)).toBe('333333\n666667');
    expect(await k.read(`${frame}/dwDefaultFrameInterval`)).toBe('333333');
    expect(await k.read(`${frame}/dwMaxVideoFrameBufferSize`)).toBe(String(640 * 480 * 2));
    expect(await link(k, `${F}/streaming/header/h/u`)).toBe(
      join(k.root, `${F}/streaming/uncompressed/u`),
    );
    for (const speed of ['fs', 'hs', 'ss']) {
      expect(await link(k, `${F}/streaming/class/${speed}/h`)).toBe(
        join(k.root, `${F}/streaming/header/h`),
      );
    }
    for (const speed of ['fs', 'ss']) {
      expect(await link(k, `${F}/control/class/${speed}/h`)).toBe(
        join(k.root, `${F}/control/header/h`),
      );
    }
    expect(await link(k, `${G}/configs/c.1/${UVC_FN}`)).toBe(join(k.root, F));
    expect(p.problems()).toEqual([]);
    expect(p.cameraOnline()).toBe(true);
    expect(p.cameraProblem()).toBeNull();
  });

  it('a UDC without isochronous endpoints: bound without the webcam, the keyboard kept, and said', async () => {
    const { k, p } = await start(true);
    expect(p.connected()).toBe(true);
    expect(p.hidNodes().keyboard).not.toBeNull();
    expect(await k.read(`${G}/configs/c.1/${UVC_FN}`)).toBeNull();
    expect(await k.read(`${F}/streaming_maxpacket`)).toBeNull();
    expect(p.cameraOnline()).toBe(false);
    expect(p.cameraProblem()).toMatch(/uvc\.usb0 was left out \(no webcam\).*dummy_udc\.0/);
    expect(p.problems().some((x) => x.includes(UVC_FN))).toBe(true);
    expect(await p.cameraNode()).toBeNull();
  });

  it('a rebuild takes the whole tree down (links before the groups they point to) and makes it again', async () => {
    const { k, p } = await start();
    await p.reinit();
    expect(p.problems()).toEqual([]);
    expect(await k.read(`${F}/streaming/uncompressed/u/640x480/wWidth`)).toBe('640');
    await p.dispose();
    platform = null;
    expect(await k.read(`${G}/idVendor`)).toBeNull();
  });

  it('dropCamera: made again without the webcam, the keyboard kept, the reason said', async () => {
    const { k, p } = await start();
    await p.dropCamera('its frame server cannot start');
    expect(await k.read(`${G}/configs/c.1/${UVC_FN}`)).toBeNull();
    expect(p.connected()).toBe(true);
    expect(p.hidNodes().keyboard).not.toBeNull();
    expect(p.cameraOnline()).toBe(false);
    const said = 'The function uvc.usb0 was taken out (no webcam): its frame server cannot start';
    expect(p.cameraProblem()).toBe(said);
    expect(p.problems()).toContain(said);
    // a rebuild (identity, mouse) keeps it out
    await p.reinit();
    expect(await k.read(`${F}/streaming_maxpacket`)).toBeNull();
  });

  it('finds the video node the kernel made under the bound UDC, not the host side’s', async () => {
    const { k, p } = await start();
    const v4l = join(k.sys, 'class', 'video4linux');
    const devices = join(k.sys, 'devices');
    // a host-side uvcvideo node (under a USB interface) and the gadget's (under gadget.0)
    const hostDev = join(devices, 'platform', 'dummy_hcd.0', 'usb1', '1-1', '1-1:1.0');
    const gadgetDev = join(devices, 'platform', 'dummy_udc.0', 'gadget.0');
    for (const [name, dev] of [
      ['video0', hostDev],
      ['video2', gadgetDev],
    ] as const) {
      await mkdir(join(v4l, name), { recursive: true });
      await mkdir(dev, { recursive: true });
      await symlink(dev, join(v4l, name, 'device'));
      await writeFile(join(v4l, name, 'uevent'), `MAJOR=81\nMINOR=2\nDEVNAME=${name}\n`);
    }
    expect(await findUvcNode(k.sys, k.dev, 'dummy_udc.0')).toBe(join(k.dev, 'video2'));
    expect(await findUvcNode(k.sys, k.dev, 'other_udc')).toBeNull();
    expect(await p.cameraNode()).toEqual({ node: join(k.dev, 'video2'), streamingInterface: 1 });
  });

  it('sizes: a YUYV frame is 2 bytes a pixel, intervals in 100 ns', () => {
    expect(uvcFrameBytes({ width: 1280, height: 720 })).toBe(1843200);
    expect(frameInterval(30)).toBe(333333);
    expect(frameInterval(15)).toBe(666667);
  });
});
