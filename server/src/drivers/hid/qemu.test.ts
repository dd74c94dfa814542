import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyEvent } from './types';
import { QemuHid, toTablet } from './qemu';
import { QemuMachine } from '../../platform/qemu/machine';
import { ensureGuestImage, readSerial, until } from '../../platform/qemu/test-support';

let dir: string;
let machine: QemuMachine;
let hid: QemuHid;

/** en-us key events for plain ASCII (enough for shell commands in this test). */
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
    else if (ch === ' ') tap('Space');
    else if (ch === '\n') tap('Enter');
    else if (ch === '-') tap('Minus');
    else if (ch === '_') tap('Minus', true);
    else throw new Error(`no key for ${ch}`);
  }
  return events;
}

async function serialLines(): Promise<string[]> {
  return (await readSerial(machine.paths.serial)).replace(/\r/g, '').split('\n');
}

/** The guest's screen text, read with its `screen` command. */
async function screenText(): Promise<string> {
  const before = (await serialLines()).length;
  await hid.typeSequence(typed('screen\n'), 0, new AbortController().signal);
  let text = '';
  // Typing `screen` and the guest's dump take seconds on a TCG guest under the whole suite's
  // load (the 10 s default failed in full runs): poll long, and say what the guest printed.
  await until(
    'screen dump',
    async () => {
      const lines = (await serialLines()).slice(before);
      const begin = lines.findIndex((l) => l.startsWith('screen begin'));
      const end = lines.findIndex((l) => l === 'screen end');
      if (begin < 0 || end < begin) return false;
      text = lines.slice(begin + 1, end).join('\n');
      return true;
    },
    45_000,
  ).catch(async (err: Error) => {
    const seen = (await serialLines()).slice(before).slice(-30).join('\n');
    throw new Error(`${err.message}; the guest's serial since:\n${seen}`);
  });
  return text;
}

beforeAll(async () => {
  ensureGuestImage();
  dir = await mkdtemp(join(tmpdir(), 'kvm-qemu-hid-'));
  machine = new QemuMachine({ runDir: join(dir, 'run') });
  hid = new QemuHid(machine);
  await hid.init();
  await machine.init();
  await until('guest ready', async () => (await serialLines()).includes('guest ready'), 60_000);
  // the shell's prompt comes a moment after init says ready
  await until(
    'usb keyboard',
    async () => (await serialLines()).some((l) => /add .*Keyboard/.test(l)),
    30_000,
  );
  // `pick` looks for the tablet once and exits without it; a loaded TCG guest enumerates the
  // USB tablet seconds after the keyboard.
  await until(
    'usb tablet',
    async () => (await serialLines()).some((l) => /add .*Tablet/.test(l)),
    60_000,
  );
}, 180_000);

afterAll(async () => {
  await hid.dispose();
  await machine.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe('QemuHid', () => {
  it('maps -32768..32767 onto the tablet 0..32767', () => {
    expect(toTablet(-32768)).toBe(0);
    expect(toTablet(32767)).toBe(32767);
    expect(toTablet(0)).toBe(16384);
    expect(toTablet(-99999)).toBe(0);
  });

  it('types through the USB keyboard and PS/2 paste; the guest shows it on its screen', async () => {
    for (const e of typed('echo usb-')) hid.sendKey(e.key, e.state);
    await hid.typeSequence(typed('Typed_42\n'), 0, new AbortController().signal);
    const screen = await screenText();
    expect(screen).toContain('guest# echo usb-Typed_42');
    expect(screen.split('\n')).toContain('usb-Typed_42');
  }, 60_000);

  it('a tablet click selects the item under the pointer; relative mode re-creates the mouse', async () => {
    const before = (await serialLines()).length;
    // A TCG guest under the whole suite's load can take many seconds: poll long, and say what
    // the guest did see when a step never comes.
    const GUEST_MS = 60_000;
    const step = (what: string, done: (lines: string[]) => boolean): Promise<unknown> =>
      until(what, async () => done((await serialLines()).slice(before)), GUEST_MS).catch(
        async (err: Error) => {
          const seen = (await serialLines()).slice(before).slice(-40).join('\n');
          throw new Error(`${err.message}; the guest's serial since the step began:\n${seen}`);
        },
      );
    await hid.typeSequence(typed('pick\n'), 0, new AbortController().signal);
    await step('pick ready', (lines) => lines.some((l) => l.startsWith('pick ready')));
    // item 3 is on text row 22: pixel rows 336-351 of 768
    const y = Math.round(((343 + 0.5) / 768) * 65535 - 32768);
    hid.sendMouseMove(0, y);
    hid.sendMouseButton('left', true);
    hid.sendMouseButton('left', false);
    await step('selection', (lines) => lines.includes('pick selected 3'));
    hid.sendMouseButton('right', true);
    hid.sendMouseButton('right', false);
    await step('pick done', (lines) => lines.includes('pick done'));

    await hid.setMouseOutput('usb_rel');
    expect(hid.getState().mouse).toMatchObject({ absolute: false, outputs: { active: 'usb_rel' } });
    await step('usb mouse', (lines) => lines.some((l) => /add QEMU QEMU USB Mouse/.test(l)));
    await hid.setMouseOutput('usb');
    expect(hid.getState().mouse.absolute).toBe(true);
    // The tablet added after the mouse, not the one the guest saw before the switch.
    const order =
      /add QEMU QEMU USB Tablet[\s\S]*add QEMU QEMU USB Mouse[\s\S]*add QEMU QEMU USB Tablet/;
    await until(
      'tablet back',
      async () => order.test(await readFile(machine.paths.serial, 'utf8')),
      GUEST_MS,
    );
  }, 300_000);
});
