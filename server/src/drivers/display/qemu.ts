/**
 * The VM's monitor identity (EDID) on the `qemu` target. QEMU's std VGA offers its own EDID
 * built from `xres`/`yres`, fixed while QEMU runs (no run-time property, and the guest reads it
 * once at boot): applying an EDID records its preferred mode, persisted so every later QEMU start
 * uses it, and the VM's next power-on or reset restarts QEMU with it (`applies: 'power_cycle'`,
 * machine.ts `powerCycle`). The guest sees QEMU's EDID with our mode, not our bytes.
 * Why not virtio-gpu display hotplug: docs/system.md.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../log';
import { atomicWriteFile } from '../../storage/atomic';
import type { DisplayDriver, DisplayMode } from './types';
import type { QemuMachine, VgaMode } from '../../platform/qemu/machine';

/** Largest mode a DTD can carry (12 bits each): 4095x4095 needs 64 MiB of VGA memory. */
const MAX_SIDE = 4095;

/**
 * QEMU's VNC server (our capture) shows at most 2560x2048 and crops anything larger: a guest at
 * 3840x2160 would stream its top-left corner. The VM then runs the largest mode of the same
 * shape that fits (3840x2160 → 2560x1440), whole on the stream; docs/system.md says so.
 */
export const VNC_MAX = { width: 2560, height: 2048 } as const;

/** `mode` scaled down to fit VNC_MAX with its aspect ratio, sides multiples of 8. */
export function fitVnc(mode: DisplayMode): DisplayMode {
  const scale = Math.min(1, VNC_MAX.width / mode.width, VNC_MAX.height / mode.height);
  if (scale === 1) return { ...mode };
  const side = (n: number) => Math.max(8, Math.floor((n * scale) / 8) * 8);
  return { width: side(mode.width), height: side(mode.height), hz: mode.hz };
}

export class QemuDisplay implements DisplayDriver {
  readonly name = 'qemu';
  readonly applies = 'power_cycle' as const;
  private readonly file: string;

  constructor(
    private readonly machine: QemuMachine,
    dataDir: string,
    private readonly log?: Logger,
  ) {
    this.file = join(dataDir, 'system', 'qemu-display.json');
  }

  /** Before the machine starts (drivers init first): the VM boots with the saved mode. */
  async init(): Promise<void> {
    const saved = await this.read();
    if (saved) {
      this.machine.setDisplay(saved);
    }
  }

  async apply(_edid: Buffer, mode: DisplayMode): Promise<void> {
    if (mode.width < 1 || mode.height < 1 || mode.width > MAX_SIDE || mode.height > MAX_SIDE) {
      throw new RangeError(`display mode ${mode.width}x${mode.height} out of range`);
    }
    const want = fitVnc({ width: mode.width, height: mode.height, hz: mode.hz });
    await atomicWriteFile(this.file, JSON.stringify(want), 0o644);
    this.machine.setDisplay(want);
    this.log?.info(
      { mode: want, asked: want.width === mode.width ? undefined : mode, pending: this.pending() },
      'VM monitor mode set',
    );
  }

  pending(): boolean {
    return this.machine.displayPending;
  }

  current(): DisplayMode | null {
    const m: VgaMode = this.machine.display;
    return { width: m.width, height: m.height, hz: m.hz ?? 60 };
  }

  async dispose(): Promise<void> {}

  private async read(): Promise<DisplayMode | null> {
    try {
      const v = JSON.parse(await readFile(this.file, 'utf8')) as Partial<DisplayMode>;
      const ok = (n: unknown): n is number =>
        typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_SIDE;
      if (!ok(v.width) || !ok(v.height)) return null;
      return fitVnc({ width: v.width, height: v.height, hz: typeof v.hz === 'number' ? v.hz : 60 });
    } catch {
      return null;
    }
  }
}
