import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_GADGET_SETTINGS, GadgetPlatform, inquiryString } from './platform';
import { FIXTURE_HID, FixtureKernel, until, type FixtureOptions } from './test-support';
import type { UdcState } from './types';

const G = 'config/usb_gadget/kvm';

let kernel: FixtureKernel | null = null;
let platform: GadgetPlatform | null = null;

afterEach(async () => {
  await platform?.dispose();
  platform = null;
  await kernel?.cleanup();
  kernel = null;
});

async function start(
  opts: FixtureOptions = {},
  extra: Partial<ConstructorParameters<typeof GadgetPlatform>[0]> = {},
  before?: (k: FixtureKernel) => Promise<void>,
): Promise<{ k: FixtureKernel; p: GadgetPlatform }> {
  kernel = await FixtureKernel.make(opts);
  await before?.(kernel);
  platform = new GadgetPlatform({ ...kernel.options(), ...extra });
  await platform.init();
  return { k: kernel, p: platform };
}

describe('GadgetPlatform: the composite gadget', () => {
  it('writes the identity, the config, the HID functions and the drive, links them and binds', async () => {
    const { k, p } = await start(
      {},
      {
        initial: async () => ({
          identity: {
            vendorId: 0x046d,
            productId: 0xc31c,
            manufacturer: 'Logitech, Inc.',
            product: 'Keyboard K120',
            serial: 'CAFEBABE',
          },
        }),
      },
    );
    expect(await k.read(`${G}/idVendor`)).toBe('0x046d');
    expect(await k.read(`${G}/idProduct`)).toBe('0xc31c');
    expect(await k.read(`${G}/bcdDevice`)).toBe('0x0100');
    expect(await k.read(`${G}/bcdUSB`)).toBe('0x0200');
    expect(await k.read(`${G}/strings/0x409/manufacturer`)).toBe('Logitech, Inc.');
    expect(await k.read(`${G}/strings/0x409/product`)).toBe('Keyboard K120');
    expect(await k.read(`${G}/strings/0x409/serialnumber`)).toBe('CAFEBABE');
    expect(await k.read(`${G}/configs/c.1/MaxPower`)).toBe('250');
    expect(await k.read(`${G}/configs/c.1/strings/0x409/configuration`)).toBe('Config 1');
    // keyboard and the absolute mouse (the default mode), not the relative one
    expect(await k.read(`${G}/functions/hid.usb0/protocol`)).toBe('1');
    expect(await k.read(`${G}/functions/hid.usb0/subclass`)).toBe('1');
    expect(await k.read(`${G}/functions/hid.usb0/report_length`)).toBe('8');
    expect([...(await k.readBytes(`${G}/functions/hid.usb0/report_desc`))]).toEqual([
      ...FIXTURE_HID.keyboard.descriptor,
    ]);
    expect([...(await k.readBytes(`${G}/functions/hid.usb1/report_desc`))]).toEqual([
      ...FIXTURE_HID.absolute.descriptor,
    ]);
    expect(await k.read(`${G}/functions/hid.usb1/report_length`)).toBe('7');
    expect(await k.exists(join(k.root, G, 'functions/hid.usb2'))).toBe(false);
    // the drive: an empty CD-ROM (start_cdrom) and GL's read-only partition LUN
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/removable`)).toBe('1');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/cdrom`)).toBe('1');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/ro`)).toBe('1');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/inquiry_string`)).toBe(
      'Linux   File-CD Gadget  0100',
    );
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.1/ro`)).toBe('1');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.1/cdrom`)).toBe('0');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.1/inquiry_string`)).toBe(
      'Linux   File-Stor Gadget0100',
    );
    const links = (await k.readdir(join(k.root, G, 'configs/c.1')))
      .filter((e) => e.kind === 'link')
      .map((e) => e.name)
      .sort();
    expect(links).toEqual(['hid.usb0', 'hid.usb1', 'mass_storage.usb0']);
    // the functions are linked before the bind, the bind is the last write
    expect(k.writes.at(-1)).toEqual([`${G}/UDC`, 'dummy_udc.0']);
    expect(p.connected()).toBe(true);
    expect(p.hidNodes()).toEqual({ keyboard: join(k.dev, 'hidg0'), mouse: join(k.dev, 'hidg1') });
    expect(p.problems()).toEqual([]);
    expect(p.udc()).toEqual({ name: 'dummy_udc.0', state: 'configured' });
    expect(p.udcState()).toBe('configured');
    expect(p.msdOnline()).toBe(true);
  });

  it('builds the functions the OTG flags ask for (no keyboard, both mice) and the start_flash drive', async () => {
    const { k, p } = await start(
      {},
      {
        initial: async () => ({
          functions: {
            ...DEFAULT_GADGET_SETTINGS.functions,
            enable_keyboard: false,
            enable_mouse_alt: true,
            start_cdrom: false,
            start_flash: true,
          },
          inquiry: { cdrom: 'GL', flash: 'GLFlash' },
        }),
      },
    );
    const fns = (await k.readdir(join(k.root, G, 'functions'))).map((e) => e.name).sort();
    expect(fns).toEqual(['hid.usb1', 'hid.usb2', 'mass_storage.usb0']);
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/cdrom`)).toBe('0');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/inquiry_string`)).toBe(
      'GLFlash File-Stor Gadget0100',
    );
    expect(p.hidNodes().keyboard).toBeNull();
    expect(p.hidNodes().mouse).toBe(join(k.dev, 'hidg0'));
  });

  it('tears a stale, half-made and bound gadget down and builds its own', async () => {
    const { k, p } = await start({}, {}, async (k) => {
      // what a crash left: bound, an extra config and function, a LUN file, strings
      const g = join(k.config, 'usb_gadget', 'kvm');
      await k.mkdir(join(g, 'strings/0x409'));
      await k.mkdir(join(g, 'configs/c.2/strings/0x409'));
      await k.mkdir(join(g, 'functions/hid.usb7'));
      await k.mkdir(join(g, 'functions/mass_storage.old/lun.3'));
      await k.symlink(join(g, 'functions/hid.usb7'), join(g, 'configs/c.2/hid.usb7'));
      await k.symlink(
        join(g, 'functions/mass_storage.old'),
        join(g, 'configs/c.2/mass_storage.old'),
      );
      await k.writeFile(join(g, 'idVendor'), '0xdead');
      await k.writeFile(join(g, 'UDC'), 'dummy_udc.0');
      k.writes.length = 0;
    });
    // the old binding went first
    expect(k.writes[0]).toEqual([`${G}/UDC`, '']);
    const fns = (await k.readdir(join(k.root, G, 'functions'))).map((e) => e.name).sort();
    expect(fns).toEqual(['hid.usb0', 'hid.usb1', 'mass_storage.usb0']);
    expect((await k.readdir(join(k.root, G, 'configs'))).map((e) => e.name)).toEqual(['c.1']);
    expect(await k.read(`${G}/idVendor`)).toBe('0x1d6b');
    expect(p.connected()).toBe(true);
    expect(p.problems()).toEqual([]);
  });

  it('tells the drivers that started before it when the gadget is made (onRebuilt)', async () => {
    kernel = await FixtureKernel.make();
    platform = new GadgetPlatform(kernel.options());
    const seen: Array<string | null> = [];
    platform.onRebuilt(() => seen.push(platform!.hidNodes().keyboard));
    await platform.init();
    expect(seen).toEqual([join(kernel.dev, 'hidg0')]);
  });

  it('a stale gadget that cannot be removed: the server starts, builds what it can and says so', async () => {
    const { p } = await start({}, {}, async (k) => {
      const g = join(k.config, 'usb_gadget', 'kvm');
      await k.mkdir(join(g, 'functions/hid.usb7'));
      // a function the kernel will not let go
      k.stuck.add(join(g, 'functions/hid.usb7'));
    });
    expect(p.problems()[0]).toMatch(/^The gadget left at .*usb_gadget\/kvm could not be removed: /);
    // built over what was left: the functions are there and bound
    expect(p.connected()).toBe(true);
    expect(p.hidNodes().keyboard).not.toBeNull();
  });

  it('removes the gadget at stop', async () => {
    const { k, p } = await start();
    await p.dispose();
    platform = null;
    expect(await k.exists(join(k.root, G))).toBe(false);
    expect(await k.read('sys/class/udc/dummy_udc.0/state')).toBe('not attached');
  });
});

describe('GadgetPlatform: faults', () => {
  it('no UDC: builds anyway, says so, and binds when one appears', async () => {
    const { k, p } = await start({ udcs: [] });
    expect(p.problems()).toEqual([
      `No USB device controller (UDC) in ${k.sys}/class/udc: this board's USB port cannot act as a device`,
    ]);
    expect(p.connected()).toBe(false);
    expect(p.udc()).toBeNull();
    expect(p.udcState()).toBe('missing');
    expect(p.msdOnline()).toBe(false);
    expect(await k.exists(join(k.root, G, 'functions/hid.usb0'))).toBe(true);
    let rebuilt = 0;
    let changes = 0;
    p.onRebuilt(() => rebuilt++);
    p.onChange(() => changes++);
    await k.addUdc('dummy_udc.0');
    await until(() => rebuilt === 1 && p.udcState() === 'configured');
    expect(p.connected()).toBe(true);
    expect(p.problems()).toEqual([]);
    expect(rebuilt).toBe(1);
    expect(changes).toBeGreaterThan(0);
    expect(p.hidNodes().keyboard).toBe(join(k.dev, 'hidg0'));
  });

  it('a named UDC that is not there is named in the problem', async () => {
    kernel = await FixtureKernel.make({ udcs: ['fe980000.usb'] });
    platform = new GadgetPlatform({ ...kernel.options(), udc: 'dummy_udc.0' });
    await platform.init();
    expect(platform.problems()).toEqual([
      `USB device controller (UDC) dummy_udc.0 is not in ${kernel.sys}/class/udc (there: fe980000.usb)`,
    ]);
    expect(platform.connected()).toBe(false);
  });

  it('configfs not mounted: the server starts and says so', async () => {
    kernel = await FixtureKernel.make({ configfs: false });
    platform = new GadgetPlatform(kernel.options());
    await platform.init();
    expect(platform.problems()).toEqual([
      `configfs is not mounted at ${kernel.config}: no USB gadget can be made`,
    ]);
    expect(platform.hidNodes()).toEqual({ keyboard: null, mouse: null });
    expect(platform.connected()).toBe(false);
    expect(platform.msdProblem()).toMatch(/configfs is not mounted/);
  });

  it('configfs mounted after the start: the gadget is made then', async () => {
    kernel = await FixtureKernel.make({ configfs: false });
    platform = new GadgetPlatform(kernel.options());
    await platform.init();
    expect(platform.problems()).toHaveLength(1);
    let rebuilt = 0;
    platform.onRebuilt(() => rebuilt++);
    await kernel.mkdir(join(kernel.config, 'usb_gadget'));
    await until(() => rebuilt === 1);
    expect(platform.problems()).toEqual([]);
    expect(platform.connected()).toBe(true);
    expect(platform.hidNodes().keyboard).toBe(join(kernel.dev, 'hidg0'));
  });

  it('libcomposite missing: configfs is there, usb_gadget is not', async () => {
    kernel = await FixtureKernel.make({ configfs: false });
    await kernel.mkdir(join(kernel.config, 'other_subsystem'));
    platform = new GadgetPlatform(kernel.options());
    await platform.init();
    expect(platform.problems()).toEqual([
      `Kernel module libcomposite is missing (${kernel.config}/usb_gadget does not exist): no USB gadget can be made`,
    ]);
  });

  it('usb_f_mass_storage missing never costs the keyboard', async () => {
    const { k, p } = await start({}, {}, (k) => k.removeModule('usb_f_mass_storage'));
    expect(p.problems()).toEqual(['Kernel module usb_f_mass_storage is missing: no virtual media']);
    expect(p.connected()).toBe(true);
    expect(p.hidNodes().keyboard).toBe(join(k.dev, 'hidg0'));
    expect(await k.exists(join(k.root, G, 'functions/mass_storage.usb0'))).toBe(false);
    expect(p.msdOnline()).toBe(false);
    await expect(p.lendImage({ path: '/x.iso', cdrom: true, rw: false })).rejects.toThrow(
      'Kernel module usb_f_mass_storage is missing: no virtual media',
    );
  });

  it('usb_f_hid missing: the drive is still made and bound', async () => {
    const { k, p } = await start({}, {}, (k) => k.removeModule('usb_f_hid'));
    expect(p.problems()).toEqual([
      'Kernel module usb_f_hid is missing: no keyboard, no absolute mouse',
    ]);
    expect(p.hidNodes()).toEqual({ keyboard: null, mouse: null });
    expect(await k.exists(join(k.root, G, 'functions/mass_storage.usb0'))).toBe(true);
    expect(p.msdOnline()).toBe(true);
  });

  it('a function refused for another reason is named with the error', async () => {
    // the module is loaded, yet the kernel refuses the function (e.g. out of minors)
    const { p } = await start({}, {}, async (k) => {
      k.missingModules.add('usb_f_hid');
    });
    expect(p.problems()).toHaveLength(2);
    expect(p.problems()[0]).toMatch(
      /^The function hid\.usb0 could not be made \(no keyboard\): ENOENT/,
    );
    expect(p.connected()).toBe(true);
  });

  it('modprobe and mount run only as root, and only when configfs lacks the gadget', async () => {
    const calls: string[][] = [];
    kernel = await FixtureKernel.make({ configfs: false });
    const run = async (file: string, args: readonly string[]) => {
      calls.push([file, ...args]);
      return { stdout: '', stderr: '' };
    };
    platform = new GadgetPlatform({ ...kernel.options(), setup: { run, root: false } });
    await platform.init();
    expect(calls).toEqual([]);
    await platform.dispose();
    platform = new GadgetPlatform({ ...kernel.options(), setup: { run, root: true } });
    await platform.init();
    const modprobe = calls.filter((c) => c[0]!.endsWith('/modprobe'));
    // this machine may have no modprobe; when it has, the three modules are asked for
    if (modprobe.length) {
      expect(modprobe.map((c) => c[1])).toEqual([
        'libcomposite',
        'usb_f_hid',
        'usb_f_mass_storage',
      ]);
    }
    const mount = calls.find((c) => c[0]!.endsWith('/mount'));
    if (mount) expect(mount.slice(1)).toEqual(['-t', 'configfs', 'none', kernel.config]);
    // the fake loaded nothing: still said
    expect(platform.problems()[0]).toMatch(/configfs is not mounted/);
  });
});

describe('GadgetPlatform: mouse mode, identity, reinit, UDC state', () => {
  it('a mouse mode switch without mouse_alt re-creates the gadget with the other mouse', async () => {
    const { k, p } = await start();
    let rebuilt = 0;
    p.onRebuilt(() => rebuilt++);
    k.writes.length = 0;
    await p.setMouseMode('relative');
    expect(rebuilt).toBe(1);
    expect(p.mouseMode()).toBe('relative');
    const fns = (await k.readdir(join(k.root, G, 'functions'))).map((e) => e.name).sort();
    expect(fns).toEqual(['hid.usb0', 'hid.usb2', 'mass_storage.usb0']);
    expect(await k.read(`${G}/functions/hid.usb2/protocol`)).toBe('2');
    const udc = k.writesUnder(`${G}/UDC`).map(([, v]) => v);
    expect(udc).toEqual(['', 'dummy_udc.0']);
    expect(p.hidNodes().mouse).toBe(join(k.dev, 'hidg3'));
    expect(p.rebuildMs()).toBeGreaterThanOrEqual(0);
    // the same mode again: nothing
    await p.setMouseMode('relative');
    expect(rebuilt).toBe(1);
  });

  it('onRebuilding is awaited before the functions go, onRebuilt follows when bound again', async () => {
    const { k, p } = await start();
    const order: string[] = [];
    p.onRebuilding(async () => {
      // the old functions are still there, still bound
      order.push(
        `rebuilding bound=${await k.read(`${G}/UDC`)} fns=${(await k.readdir(join(k.root, G, 'functions'))).length}`,
      );
    });
    p.onRebuilt(() => order.push(`rebuilt bound=${p.connected()}`));
    await p.setMouseMode('relative');
    await p.setConnected(false);
    await p.setConnected(true);
    expect(order).toEqual([
      'rebuilding bound=dummy_udc.0 fns=3',
      'rebuilt bound=true',
      'rebuilding bound=dummy_udc.0 fns=3',
      'rebuilt bound=true',
    ]);
  });

  it('with mouse_alt both mice are there and a switch only changes the node', async () => {
    const { k, p } = await start(
      {},
      {
        initial: async () => ({
          functions: { ...DEFAULT_GADGET_SETTINGS.functions, enable_mouse_alt: true },
        }),
      },
    );
    const abs = p.hidNodes().mouse;
    let rebuilt = 0;
    p.onRebuilt(() => rebuilt++);
    k.writes.length = 0;
    await p.setMouseMode('relative');
    expect(k.writes).toEqual([]);
    expect(rebuilt).toBe(1);
    expect(p.hidNodes().mouse).not.toBe(abs);
    expect(p.hidNodes().mouse).toBe(join(k.dev, 'hidg2'));
  });

  it('an identity change rebuilds with the new ids; the same settings do nothing', async () => {
    const { k, p } = await start();
    let rebuilt = 0;
    p.onRebuilt(() => rebuilt++);
    await p.configure({ identity: { ...DEFAULT_GADGET_SETTINGS.identity } });
    expect(rebuilt).toBe(0);
    await p.configure({
      identity: {
        vendorId: 0x1234,
        productId: 0xabcd,
        manufacturer: 'M',
        product: 'P',
        serial: 'S1',
      },
    });
    expect(rebuilt).toBe(1);
    expect(await k.read(`${G}/idVendor`)).toBe('0x1234');
    expect(await k.read(`${G}/idProduct`)).toBe('0xabcd');
    expect(await k.read(`${G}/strings/0x409/serialnumber`)).toBe('S1');
    // enable_mic is not a function of this gadget: no rebuild
    await p.configure({ functions: { ...p.settingsNow().functions, enable_mic: true } });
    expect(rebuilt).toBe(1);
    // the keyboard off: rebuilt without it
    await p.configure({ functions: { ...p.settingsNow().functions, enable_keyboard: false } });
    expect(rebuilt).toBe(2);
    expect(await k.exists(join(k.root, G, 'functions/hid.usb0'))).toBe(false);
    expect(p.hidNodes().keyboard).toBeNull();
  });

  it('stays unbound long enough for the host to see it gone (the rebind gap)', async () => {
    const { k, p } = await start({}, { rebindGapMs: 150 });
    const t = (): number[] =>
      k.writes.flatMap(([path], i) => (path.endsWith('/UDC') ? [k.writeTimes[i]!] : []));
    const before = t().length;
    await p.reinit();
    const iso = join(k.root, 'b.img');
    await writeFile(iso, 'x');
    // a drive type change: unbind and bind without a rebuild
    await p.lendImage({ path: iso, cdrom: false, rw: false });
    const times = t().slice(before);
    expect(times).toHaveLength(4);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(150);
    expect(times[3]! - times[2]!).toBeGreaterThanOrEqual(150);
  });

  it('reinit re-creates the same gadget', async () => {
    const { k, p } = await start();
    k.writes.length = 0;
    await p.reinit();
    expect(k.writesUnder(`${G}/UDC`).map(([, v]) => v)).toEqual(['', 'dummy_udc.0']);
    expect(await k.read(`${G}/idVendor`)).toBe('0x1d6b');
  });

  it('reports every UDC state change and `missing` when the UDC goes', async () => {
    const { k, p } = await start();
    const seen: UdcState[] = [];
    p.onUdcState((s) => seen.push(s));
    await k.setUdcState('dummy_udc.0', 'suspended');
    await until(() => p.udcState() === 'suspended');
    await k.setUdcState('dummy_udc.0', 'configured');
    await until(() => p.udcState() === 'configured');
    const { rm } = await import('node:fs/promises');
    await rm(join(k.sys, 'class/udc/dummy_udc.0'), { recursive: true });
    await until(() => p.udcState() === 'missing');
    expect(seen).toEqual(['suspended', 'configured', 'missing']);
  });

  it('a UDC that goes away while bound is said, and the gadget bound again when it is back', async () => {
    const { k, p } = await start();
    let rebuilt = 0;
    let rebuilding = 0;
    p.onRebuilt(() => rebuilt++);
    p.onRebuilding(async () => {
      rebuilding++;
    });
    const { rm } = await import('node:fs/promises');
    await rm(join(k.sys, 'class/udc/dummy_udc.0'), { recursive: true });
    // the kernel unbinds the gadget of a UDC that goes (this one clears the name)
    await writeFile(join(k.root, G, 'UDC'), '');
    await until(() => p.problems().length === 1);
    expect(p.problems()).toEqual([
      `No USB device controller (UDC) in ${k.sys}/class/udc: this board's USB port cannot act as a device`,
    ]);
    expect(p.connected()).toBe(false);
    expect(rebuilding).toBe(1);
    await k.addUdc('dummy_udc.0');
    await until(() => rebuilt === 1 && p.udcState() === 'configured');
    expect(await k.read(`${G}/UDC`)).toBe('dummy_udc.0');
    expect(k.writesUnder(`${G}/UDC`).map(([, v]) => v)).toEqual(['dummy_udc.0', 'dummy_udc.0']);
    expect(p.problems()).toEqual([]);
    expect(p.connected()).toBe(true);
  });

  it('a UDC back whose gadget the kernel bound by itself is not written again', async () => {
    const { k, p } = await start();
    let rebuilt = 0;
    p.onRebuilt(() => rebuilt++);
    const { rm } = await import('node:fs/promises');
    await rm(join(k.sys, 'class/udc/dummy_udc.0'), { recursive: true });
    await until(() => p.problems().length === 1);
    await k.addUdc('dummy_udc.0');
    await until(() => rebuilt === 1 && p.connected());
    expect(p.problems()).toEqual([]);
    // only the start's bind: a second write would be refused (EBUSY) by such a kernel
    expect(k.writesUnder(`${G}/UDC`).map(([, v]) => v)).toEqual(['dummy_udc.0']);
  });

  it('setConnected unbinds and binds the UDC', async () => {
    const { k, p } = await start();
    await p.setConnected(false);
    expect(p.connected()).toBe(false);
    expect(await k.read(`${G}/UDC`)).toBe('');
    await until(() => p.udcState() === 'not attached');
    await p.setConnected(true);
    expect(await k.read(`${G}/UDC`)).toBe('dummy_udc.0');
    expect(p.connected()).toBe(true);
  });
});

describe('GadgetPlatform: the drive', () => {
  it('lends a CD-ROM image, ejects it, lends a flash image (re-enumerated: the type changed)', async () => {
    const { k, p } = await start();
    const iso = join(k.root, 'a.iso');
    const img = join(k.root, 'b.img');
    await writeFile(iso, 'iso');
    await writeFile(img, 'img');
    const lun = `${G}/functions/mass_storage.usb0/lun.0`;
    k.writes.length = 0;
    await p.lendImage({ path: iso, cdrom: true, rw: false });
    expect(await k.read(`${lun}/file`)).toBe(iso);
    expect(await k.read(`${lun}/cdrom`)).toBe('1');
    expect(await k.read(`${lun}/ro`)).toBe('1');
    // the same type as enumerated: no re-enumeration
    expect(k.writesUnder(`${G}/UDC`)).toEqual([]);
    await p.ejectImage();
    expect(await k.read(`${lun}/file`)).toBe('');
    expect(k.writes.some(([path]) => path === `${lun}/forced_eject`)).toBe(true);
    let rebuilt = 0;
    p.onRebuilt(() => rebuilt++);
    await p.lendImage({ path: img, cdrom: false, rw: true });
    expect(await k.read(`${lun}/cdrom`)).toBe('0');
    expect(await k.read(`${lun}/ro`)).toBe('0');
    expect(await k.read(`${lun}/inquiry_string`)).toBe(inquiryString('Linux', false));
    expect(await k.read(`${lun}/file`)).toBe(img);
    expect(k.writesUnder(`${G}/UDC`).map(([, v]) => v)).toEqual(['', 'dummy_udc.0']);
    expect(rebuilt).toBe(1);
    // a lent image is switched: it is ejected first (the kernel refuses cdrom/ro while open),
    // and the type changed back: enumerated again
    k.writes.length = 0;
    await p.lendImage({ path: iso, cdrom: true, rw: false });
    expect(await k.read(`${lun}/file`)).toBe(iso);
    expect(await k.read(`${lun}/cdrom`)).toBe('1');
    expect(k.writesUnder(`${G}/UDC`).map(([, v]) => v)).toEqual(['', 'dummy_udc.0']);
    // the same type again: not
    k.writes.length = 0;
    await p.lendImage({ path: iso, cdrom: true, rw: false });
    expect(k.writesUnder(`${G}/UDC`)).toEqual([]);
    expect(rebuilt).toBe(2);
  });

  it('a failed lend leaves the drive as it was', async () => {
    const { k, p } = await start();
    const img = join(k.root, 'b.img');
    await writeFile(img, 'img');
    const lun = `${G}/functions/mass_storage.usb0/lun.0`;
    await p.lendImage({ path: img, cdrom: false, rw: false });
    await expect(
      p.lendImage({ path: join(k.root, 'gone.iso'), cdrom: true, rw: false }),
    ).rejects.toThrow(/The drive did not take .*gone\.iso: ENOENT/);
    expect(await k.read(`${lun}/file`)).toBe(img);
    expect(await k.read(`${lun}/cdrom`)).toBe('0');
    expect(await k.read(`${lun}/ro`)).toBe('1');
    expect(p.luns().image).toEqual({ path: img, cdrom: false, rw: false });
  });

  it('lent media stay lent across a rebuild', async () => {
    const { k, p } = await start();
    const img = join(k.root, 'b.img');
    const part = join(k.root, 'mmcblk0p10');
    await writeFile(img, 'img');
    await writeFile(part, '');
    await p.lendImage({ path: img, cdrom: false, rw: true });
    await p.lendPartition(part);
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.1/file`)).toBe(part);
    await p.setMouseMode('relative');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/file`)).toBe(img);
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/cdrom`)).toBe('0');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.0/ro`)).toBe('0');
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.1/file`)).toBe(part);
    await p.ejectPartition();
    expect(await k.read(`${G}/functions/mass_storage.usb0/lun.1/file`)).toBe('');
    expect(p.luns()).toEqual({ image: { path: img, cdrom: false, rw: true }, partition: null });
  });
});
