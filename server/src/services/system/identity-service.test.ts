import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEVICE_IDENTITY_PRESETS,
  USB_VENDOR_PRESETS,
  matchIdentityPreset,
  parseUsbId,
  validateUsbIdentity,
  type HidState,
} from '@kvm/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import type { UsbIdentity, UsbIdentityDriver } from '../../drivers/usb/types';
import { parseParamsQuery } from './identity-input';
import { IdentityService, PARAMS_QUEUE_MAX, type MouseOutputs } from './identity-service';

const USB_IDS = '/usr/share/hwdata/usb.ids';

/** usb.ids: vendor lines `vvvv  Name`, device lines `\tpppp  Name`. */
function parseUsbIds(text: string): Map<number, { name: string; products: Map<number, string> }> {
  const vendors = new Map<number, { name: string; products: Map<number, string> }>();
  let current: { name: string; products: Map<number, string> } | null = null;
  for (const line of text.split('\n')) {
    // the vendor list ends where the device classes (`C 00 ...`) begin
    if (/^C [0-9a-f]{2}\s/.test(line)) break;
    const vendor = /^([0-9a-f]{4}) {2}(.+)$/.exec(line);
    if (vendor) {
      current = { name: vendor[2]!, products: new Map() };
      vendors.set(parseInt(vendor[1]!, 16), current);
      continue;
    }
    const product = /^\t([0-9a-f]{4}) {2}(.+)$/.exec(line);
    if (product && current) current.products.set(parseInt(product[1]!, 16), product[2]!);
  }
  return vendors;
}

describe('identity presets', () => {
  it.skipIf(!existsSync(USB_IDS))(
    'name real vendors and products of usb.ids (skipped without /usr/share/hwdata/usb.ids)',
    () => {
      const ids = parseUsbIds(readFileSync(USB_IDS, 'utf8'));
      const all = [...DEVICE_IDENTITY_PRESETS, ...USB_VENDOR_PRESETS];
      expect(all.length).toBe(9);
      for (const p of all) {
        const vendor = ids.get(parseUsbId(p.otg_vendor_id)!);
        expect(vendor?.name, `${p.key} vendor`).toBe(p.otg_manufacturer);
        expect(vendor?.products.get(parseUsbId(p.otg_product_id)!), `${p.key} product`).toBe(
          p.otg_product,
        );
        expect(validateUsbIdentity(p), p.key).toBeNull();
      }
    },
  );

  it('has SPEC 3 presets with the EDID of each', () => {
    expect(DEVICE_IDENTITY_PRESETS.map((p) => [p.key, p.edid])).toEqual([
      ['default', 'E1920x1080'],
      ['monitor_1080p_receiver', 'E1920x1080'],
      ['monitor_2k_cherry', 'E2560x1440'],
      ['monitor_4k_holtek', 'E3840x2160'],
    ]);
    expect(USB_VENDOR_PRESETS.map((p) => p.edid)).toEqual([null, null, null, null, null]);
  });

  it('matches a preset whatever the serial, ids as numbers, else custom', () => {
    const p = DEVICE_IDENTITY_PRESETS[2]!;
    const fields = { ...p, otg_vendor_id: '46a', otg_product_id: '0x00c4' };
    expect(matchIdentityPreset({ ...fields, otg_serial: 'X1' })).toBe('monitor_2k_cherry');
    expect(matchIdentityPreset({ ...fields, otg_serial: '' })).toBe('monitor_2k_cherry');
    expect(matchIdentityPreset({ ...fields, otg_product: 'Other' })).toBe('custom');
  });

  it('validates SPEC 5 rules field by field', () => {
    const ok = { ...DEVICE_IDENTITY_PRESETS[0]! };
    expect(validateUsbIdentity(ok)).toBeNull();
    expect(validateUsbIdentity({ ...ok, otg_serial: 'AB-12_c.d' })).toBeNull();
    expect(validateUsbIdentity({ ...ok, otg_vendor_id: '0x12345' })?.code).toBe('invalid_hex');
    expect(validateUsbIdentity({ ...ok, otg_product_id: 'zz' })?.message).toBe(
      'otg_product_id must be a valid hexadecimal value',
    );
    expect(validateUsbIdentity({ ...ok, otg_product: '' })?.code).toBe('required');
    expect(validateUsbIdentity({ ...ok, otg_product: 'x'.repeat(127) })?.code).toBe('too_long');
    expect(validateUsbIdentity({ ...ok, otg_product: 'caf\u00e9' })?.code).toBe('invalid_chars');
    expect(validateUsbIdentity({ ...ok, otg_serial: 'a b' })?.field).toBe('otg_serial');
    const { otg_manufacturer: _m, ...missing } = ok;
    expect(validateUsbIdentity(missing)?.field).toBe('otg_manufacturer');
    expect(validateUsbIdentity({ otg_serial: 'x' }, { partial: true })).toBeNull();
  });
});

class RecordingUsb implements UsbIdentityDriver {
  readonly name = 'recording';
  readonly applies = ['otg_serial' as const];
  applied: UsbIdentity[] = [];
  fail = false;
  gate: Promise<void> | null = null;
  async apply(identity: UsbIdentity): Promise<void> {
    if (this.gate) await this.gate;
    if (this.fail) throw new Error('re-plug failed');
    this.applied.push(identity);
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
}

class FakeMouse implements MouseOutputs {
  active = 'usb';
  getState(): Pick<HidState, 'mouse'> {
    return {
      mouse: {
        online: true,
        absolute: this.active === 'usb',
        outputs: { available: ['usb', 'usb_rel'], active: this.active },
      },
    };
  }
  async setParams(p: { mouseOutput?: string }): Promise<void> {
    if (p.mouseOutput) this.active = p.mouseOutput;
  }
}

describe('IdentityService', () => {
  let dir: string;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function open(usb = new RecordingUsb(), mouse = new FakeMouse()) {
    dir ??= await mkdtemp(join(tmpdir(), 'kvm-identity-'));
    const service = await IdentityService.open({
      dataDir: dir,
      usb,
      hid: mouse,
      msd: { getState: () => ({ enabled: true, drive: { cdrom: true } as never }) },
      defaultMsdPartition: '/srv/msd',
    });
    return { service, usb, mouse };
  }

  it('stores changes atomically and re-applies the USB identity only when it changed', async () => {
    const { service, usb } = await open();
    await service.set({ otg_serial: 'SER-1', mic_name: 'Mic' });
    expect(usb.applied.map((a) => a.otg_serial)).toEqual(['SER-1']);
    await service.set(parseParamsQuery({ mic_name: 'Other mic', privacy_enable: 'true' }, []));
    expect(usb.applied).toHaveLength(1);
    const file = JSON.parse(await readFile(join(dir, 'system', 'params.json'), 'utf8'));
    expect(file).toMatchObject({
      otg_serial: 'SER-1',
      mic_name: 'Other mic',
      privacy_enable: true,
    });
    // a second service reads what the first stored
    const again = await open();
    expect(again.service.get()).toMatchObject({ otg_serial: 'SER-1', privacy_enable: true });
  });

  it('puts everything back when the driver fails', async () => {
    const usb = new RecordingUsb();
    const { service } = await open(usb);
    const before = service.get();
    usb.fail = true;
    await expect(
      service.set(parseParamsQuery({ otg_vendor_id: '0x1234' }, [])),
    ).rejects.toMatchObject({
      status: 500,
      wireName: 'UsbIdentityApplyError',
      message: 'USB identity not applied: re-plug failed',
    });
    expect(service.get()).toEqual(before);
    const file = JSON.parse(await readFile(join(dir, 'system', 'params.json'), 'utf8'));
    expect(file.otg_vendor_id).toBe(0x1d6b);
  });

  it('reads a damaged file field by field', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvm-identity-'));
    await mkdir(join(dir, 'system'));
    await writeFile(
      join(dir, 'system', 'params.json'),
      JSON.stringify({ otg_vendor_id: 99999, otg_product: 'Kept', mic_name: 7 }),
    );
    const { service } = await open();
    expect(service.get()).toMatchObject({
      otg_vendor_id: '0x1D6B',
      otg_product: 'Kept',
      mic_name: 'USB Microphone',
    });
  });

  it('runs one apply at a time and refuses past the queue bound', async () => {
    const usb = new RecordingUsb();
    let release!: () => void;
    usb.gate = new Promise((r) => (release = r));
    const { service } = await open(usb);
    const runs = Array.from({ length: PARAMS_QUEUE_MAX + 1 }, (_, i) =>
      service.set({ otg_serial: `S${i}` }),
    );
    await expect(service.set({ otg_serial: 'late' })).rejects.toMatchObject({
      status: 409,
      wireName: 'SystemParamsBusyError',
    });
    release();
    await Promise.all(runs);
    expect(usb.applied.map((a) => a.otg_serial)).toEqual(['S0', 'S1', 'S2', 'S3', 'S4']);
  });

  it('otg_functions reach a driver that builds the functions (the gadget), not the others', async () => {
    const { service, usb } = await open();
    await service.setOtgFunctions({ enable_mouse_alt: true });
    // QEMU's and the testbed's: stored only
    expect(usb.applied).toHaveLength(0);
    const gadget = new (class extends RecordingUsb {
      readonly appliesFunctions = true;
      reinits: UsbIdentity[] = [];
      async reinit(identity: UsbIdentity): Promise<void> {
        this.reinits.push(identity);
      }
    })();
    await rm(dir, { recursive: true, force: true });
    dir = undefined as unknown as string;
    const { service: g } = await open(gadget);
    await g.setOtgFunctions({ enable_keyboard: false });
    expect(gadget.applied).toHaveLength(1);
    expect(gadget.applied[0]!.functions).toMatchObject({ enable_keyboard: false });
    expect(gadget.applied[0]!.inquiry).toEqual({ cdrom: 'Linux', flash: 'Linux' });
    // reinit_udc goes to the driver's reinit (a rebuild even though nothing changed)
    await g.reinit();
    expect(gadget.reinits).toHaveLength(1);
    expect(gadget.applied).toHaveLength(1);
  });

  it('two changes queued together both stay: each is merged when its turn comes', async () => {
    const usb = new RecordingUsb();
    let release!: () => void;
    usb.gate = new Promise((r) => (release = r));
    const { service } = await open(usb);
    const serial = service.set({ otg_serial: 'SER-A' });
    const mic = service.set({ mic_name: 'Desk mic' });
    const functions = service.setOtgFunctions({ start_flash: true });
    release();
    await Promise.all([serial, mic, functions]);
    expect(service.stored()).toMatchObject({
      otg_serial: 'SER-A',
      mic_name: 'Desk mic',
      otg_functions: { start_flash: true, start_cdrom: true },
    });
    const file = JSON.parse(await readFile(join(dir, 'system', 'params.json'), 'utf8'));
    expect(file).toMatchObject({ otg_serial: 'SER-A', mic_name: 'Desk mic' });
  });
});
