/**
 * The QEMU HID's interactive queue against a stand-in machine whose QMP answers only when the
 * test lets it (a guest that stopped taking input): floods stay bounded and no key sticks.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { QEMU_INPUT_QUEUE_MAX, QemuHid } from './qemu';
import type { QemuMachine } from '../../platform/qemu/machine';
import type { QmpInputEvent } from '../../platform/qemu/qmp';

function stalledMachine() {
  const sent: QmpInputEvent[][] = [];
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const machine = Object.assign(new EventEmitter(), {
    power: 'running',
    qmp: {
      execute: async (_cmd: string, args: { events: QmpInputEvent[] }) => {
        await gate;
        sent.push(args.events);
        return {};
      },
    },
    command: async () => ({}),
  });
  return { machine: machine as unknown as QemuMachine, sent, open };
}

/** Key transitions in the order QMP got them, as `qcode+` / `qcode-`. */
function keyLog(sent: QmpInputEvent[][]): string[] {
  return sent.flat().flatMap((e) => {
    if (e.type !== 'key') return [];
    const data = e.data as { down: boolean; key: { data: string } };
    return [`${data.key.data}${data.down ? '+' : '-'}`];
  });
}

describe('QemuHid input queue', () => {
  it('stays bounded under a flood while the guest stalls, and still releases every key', async () => {
    const { machine, sent, open } = stalledMachine();
    const hid = new QemuHid(machine);
    hid.sendKey('ShiftLeft', true);
    hid.sendMouseButton('left', true);
    for (let i = 0; i < 20_000; i++) hid.sendMouseWheel(0, 127);
    for (let i = 0; i < 20_000; i++) hid.sendMouseMove(i, -i);
    for (let i = 0; i < 5_000; i++) {
      hid.sendKey('KeyA', true);
      hid.sendKey('KeyA', false);
    }
    // Releases of keys that are not down add nothing.
    for (let i = 0; i < 5_000; i++) hid.sendKey('KeyZ', false);
    expect(hid.queued).toBeLessThanOrEqual(QEMU_INPUT_QUEUE_MAX);
    expect(hid.droppedReports).toBeGreaterThan(0);
    // Past the bound, releases of what is down still go in.
    hid.sendKey('ShiftLeft', false);
    hid.sendMouseButton('left', false);
    expect(hid.queued).toBeLessThanOrEqual(QEMU_INPUT_QUEUE_MAX + 2);

    open();
    await expect.poll(() => hid.queued, { timeout: 20_000 }).toBe(0);
    const keys = keyLog(sent);
    expect(keys[0]).toBe('shift+');
    expect(keys.at(-1)).toBe('shift-');
    const down = new Set<string>();
    for (const k of keys) {
      if (k.endsWith('+')) down.add(k.slice(0, -1));
      else down.delete(k.slice(0, -1));
    }
    expect([...down]).toEqual([]);
    const buttons = sent
      .flat()
      .filter((e) => e.type === 'btn' && (e.data as { button: string }).button === 'left');
    expect(buttons.map((e) => (e.data as { down: boolean }).down)).toEqual([true, false]);
    await hid.dispose();
  });
});
