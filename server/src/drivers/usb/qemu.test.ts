import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyEvent } from '../hid/types';
import { DisabledHid } from '../hid/disabled';
import { DisabledUsbIdentity } from './disabled';
import { QemuHid } from '../hid/qemu';
import { QemuMachine } from '../../platform/qemu/machine';
import { ensureGuestImage, readSerial, until } from '../../platform/qemu/test-support';
import { QemuUsbIdentity, qemuUsbIdentity } from './qemu';

let dir: string;
let machine: QemuMachine;
let hid: QemuHid;
let usb: QemuUsbIdentity;

const SHIFTED: Record<string, string> = { '*': 'Digit8', '>': 'Period', _: 'Minus' };
const PLAIN: Record<string, string> = { '/': 'Slash', ' ': 'Space', '\n': 'Enter', '-': 'Minus' };

/** en-us key events for the shell commands of this test. */
function typed(text: string): KeyEvent[] {
  const events: KeyEvent[] = [];
  const tap = (key: string, shift = false) => {
    if (shift) events.push({ key: 'ShiftLeft', state: true });
    events.push({ key, state: true }, { key, state: false });
    if (shift) events.push({ key: 'ShiftLeft', state: false });
  };
  for (const ch of text) {
    if (/[a-z]/.test(ch)) tap(`Key${ch.toUpperCase()}`);
    else if (/[A-Z]/.test(ch)) tap(`Key${ch}`, true);
    else if (/[0-9]/.test(ch)) tap(`Digit${ch}`);
    else if (PLAIN[ch]) tap(PLAIN[ch]);
    else if (SHIFTED[ch]) tap(SHIFTED[ch], true);
    else throw new Error(`no key for ${ch}`);
  }
  return events;
}

async function serialText(): Promise<string> {
  return (await readSerial(machine.paths.serial)).replace(/\r/g, '');
}

function count(text: string, re: RegExp): number {
  return text.match(new RegExp(re.source, `g${re.flags.replace('g', '')}`))?.length ?? 0;
}

/** QEMU's own view of the USB buses (`info usb`). */
async function infoUsb(): Promise<string> {
  return (await machine.command(
    'human-monitor-command' as never,
    {
      'command-line': 'info usb',
    } as never,
  )) as unknown as string;
}

/** Types on the USB keyboard (the re-plugged device itself), one key transition per slot. */
async function typeUsb(text: string): Promise<void> {
  for (const e of typed(text)) hid.sendKey(e.key, e.state);
  await until('typed', () => hid.queued === 0, 30_000);
}

const GUEST_MS = 90_000;

beforeAll(async () => {
  ensureGuestImage();
  dir = await mkdtemp(join(tmpdir(), 'kvm-qemu-usbid-'));
  machine = new QemuMachine({ runDir: join(dir, 'run') });
  hid = new QemuHid(machine);
  usb = new QemuUsbIdentity(hid);
  await hid.init();
  await usb.init();
  await machine.init();
  await until('guest ready', async () => (await serialText()).includes('guest ready'), GUEST_MS);
  await until('usb keyboard', async () => /add .*Keyboard/.test(await serialText()), GUEST_MS);
  await until('usb tablet', async () => /add .*Tablet/.test(await serialText()), GUEST_MS);
}, 240_000);

afterAll(async () => {
  await usb?.dispose();
  await hid?.dispose();
  await machine?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('QemuUsbIdentity', () => {
  it('is the qemu HID driver`s devices, or none with another HID driver', () => {
    expect(qemuUsbIdentity(hid)).toBeInstanceOf(QemuUsbIdentity);
    expect(qemuUsbIdentity(new DisabledHid())).toBeInstanceOf(DisabledUsbIdentity);
    expect(usb.applies).toEqual(['otg_serial']);
  });

  it('re-plugs the keyboard and tablet with the serial; the guest reads it; typing still works', async () => {
    const before = await serialText();
    const busBefore = await infoUsb();
    const identity = {
      otg_manufacturer: 'Logitech, Inc.',
      otg_product: 'Unifying Receiver',
      otg_vendor_id: 0x046d,
      otg_product_id: 0xc52b,
      otg_serial: 'KVMH5SER1',
    };
    const t0 = performance.now();
    await usb.apply(identity);
    // docs/system.md quotes this figure
    console.log(`usb identity re-plug: ${Math.round(performance.now() - t0)} ms`);
    // both devices were added again
    await until(
      'devices re-added',
      async () => {
        const text = await serialText();
        return (
          count(text, /add .*Keyboard/) > count(before, /add .*Keyboard/) &&
          count(text, /add .*Tablet/) > count(before, /add .*Tablet/)
        );
      },
      GUEST_MS,
    );
    // same bus (-usb's UHCI, 12 Mb/s) and ids as on the command line
    const busAfter = await infoUsb();
    expect(busBefore).toMatch(/12 Mb\/s, Product QEMU USB Keyboard, ID: kbd/);
    expect(busAfter).toMatch(/12 Mb\/s, Product QEMU USB Keyboard, ID: kbd/);
    expect(busAfter).toMatch(/12 Mb\/s, Product QEMU USB Tablet, ID: tablet/);
    const devices = (await machine.command(
      'qom-list' as never,
      {
        path: '/machine/peripheral',
      } as never,
    )) as unknown as { name: string }[];
    expect(devices.map((d) => d.name)).toEqual(expect.arrayContaining(['kbd', 'tablet']));
    // typed on the re-plugged USB keyboard: the guest prints the serials to its serial port
    await typeUsb('cat /sys/bus/usb/devices/*/serial >/dev/ttyS0\n');
    await until(
      'serial read by the guest',
      async () => count(await serialText(), /^KVMH5SER1$/m) >= 2,
      GUEST_MS,
    ).catch(async (err: Error) => {
      const seen = (await serialText()).slice(before.length).split('\n').slice(-40).join('\n');
      throw new Error(`${err.message}; the guest's serial since the re-plug:\n${seen}`);
    });
  }, 240_000);

  it('plugs them with the serial again after QEMU restarts', async () => {
    const serialOf = async (id: string): Promise<string> =>
      (await machine.command(
        'qom-get' as never,
        {
          path: `/machine/peripheral/${id}`,
          property: 'serial',
        } as never,
      )) as unknown as string;
    expect(await serialOf('kbd')).toBe('KVMH5SER1');
    const pid = machine.pid!;
    process.kill(pid, 'SIGKILL');
    await until(
      'a new QEMU with the serial on both devices',
      async () => {
        if (machine.pid === pid || machine.qmp === null) return false;
        try {
          return (
            (await serialOf('kbd')) === 'KVMH5SER1' && (await serialOf('tablet')) === 'KVMH5SER1'
          );
        } catch {
          return false; // between the start and the re-plug
        }
      },
      GUEST_MS,
    );
  }, 240_000);
});
