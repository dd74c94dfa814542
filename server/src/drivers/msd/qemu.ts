/**
 * QEMU virtual media (architecture.md, QEMU pitfalls):
 * - CD-ROM: the machine's IDE CD-ROM (`-device ide-cd,id=cdrom`, empty at start) takes the image
 *   as its medium with `blockdev-change-medium` (raw, read-only) and gives it back with `eject`.
 * - Flash drive: a raw block node over the file (`blockdev-add`, read-only unless rw) on a
 *   hot-plugged `usb-storage` (removable). Unplug: `device_del`, wait for DEVICE_DELETED (the
 *   node stays in use until QEMU let the device go), then `blockdev-del`.
 * - Partition: a read-only `vvfat` node over the storage folder on a second `usb-storage`. vvfat
 *   builds a FAT disk of about 504 MB from the folder when the node is opened: a folder holding
 *   more than that is refused by QEMU (the message reaches the admin).
 * QEMU restarts (a crash, ATX power cycles through `quit`) lose all of it: on `ready` the driver
 * plugs again whatever is connected.
 */
import { assertRegularFile } from './lend-check';
import type { MsdDriver, MsdDriverState, MsdImageMount } from './types';
import type { QemuMachine } from '../../platform/qemu/machine';
import type { QmpClient } from '../../platform/qemu/qmp';
import type { Logger } from '../../log';
import { SerialQueue } from '../../sync/serial-queue';

/** The qdev id of the IDE CD-ROM of qemuArgs(). */
export const CDROM_ID = 'cdrom';
/** qdev id of the flash drive's usb-storage and node name of its block node. */
export const FLASH_ID = 'msd-flash';
/** Same for the storage-folder drive. */
export const PARTITION_ID = 'msd-part';

const UNPLUG_TIMEOUT_MS = 5000;

export interface QemuMsdOptions {
  /**
   * USB bus for the two usb-storage devices (e.g. `xhci.0` if the machine has a `qemu-xhci`
   * with id `xhci`); default: QEMU's choice, the PIIX3 UHCI of `-usb` (USB 1.1, about 1 MB/s).
   */
  usbBus?: string;
}

export class QemuMsd implements MsdDriver {
  readonly name = 'qemu';
  private readonly listeners = new Set<(state: MsdDriverState) => void>();
  /** What is lent, and the QMP connection (the QEMU process) it was plugged into. */
  private image: { mount: MsdImageMount; on: QmpClient | null } | null = null;
  private partition: { dir: string; on: QmpClient | null } | null = null;
  /** One QMP sequence at a time: a plug and a re-plug after a restart never interleave. */
  private readonly queue = new SerialQueue();
  private online: boolean;

  private readonly onPower = (): void => {
    const online = this.machine.power !== 'unavailable';
    if (online === this.online) return;
    this.online = online;
    const state = this.getState();
    for (const l of this.listeners) l(state);
  };

  private readonly onReady = (qmp: QmpClient): void => {
    void this.serial(() => this.reapply(qmp)).catch(() => undefined);
  };

  constructor(
    private readonly machine: QemuMachine,
    private readonly log?: Logger,
    private readonly opts: QemuMsdOptions = {},
  ) {
    this.online = machine.power !== 'unavailable';
  }

  getState(): MsdDriverState {
    return { online: this.online };
  }

  onState(listener: (state: MsdDriverState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async init(): Promise<void> {
    this.machine.on('power', this.onPower);
    this.machine.on('ready', this.onReady);
    this.onPower();
  }

  async dispose(): Promise<void> {
    this.machine.off('power', this.onPower);
    this.machine.off('ready', this.onReady);
  }

  connectImage(mount: MsdImageMount): Promise<void> {
    return this.serial(async () => {
      if (this.image) throw new Error('An image is connected already');
      await assertRegularFile(mount.path);
      const qmp = await this.machine.waitReady(10_000);
      await this.plugImage(mount);
      this.image = { mount: { ...mount }, on: qmp };
    });
  }

  disconnectImage(): Promise<void> {
    return this.serial(async () => {
      const image = this.image;
      if (!image) return;
      if (this.machine.qmp) {
        if (image.mount.cdrom) await this.eject();
        else await this.unplug(FLASH_ID);
      }
      // With QEMU down there is nothing to unplug: the restart must not plug it again.
      this.image = null;
    });
  }

  connectPartition(dir: string): Promise<void> {
    return this.serial(async () => {
      if (this.partition) throw new Error('The storage is connected already');
      const qmp = await this.machine.waitReady(10_000);
      await this.plugPartition(dir);
      this.partition = { dir, on: qmp };
    });
  }

  disconnectPartition(): Promise<void> {
    return this.serial(async () => {
      if (!this.partition) return;
      if (this.machine.qmp) await this.unplug(PARTITION_ID);
      this.partition = null;
    });
  }

  // ---- internals ----

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.queue.run(fn);
  }

  private async plugImage(mount: MsdImageMount): Promise<void> {
    if (mount.cdrom) {
      // force: open the tray even if the guest locked it (it would only be asked to, else).
      await this.machine.command('blockdev-change-medium', {
        id: CDROM_ID,
        filename: mount.path,
        format: 'raw',
        'read-only-mode': 'read-only',
        force: true,
      });
      return;
    }
    await this.plugUsb(FLASH_ID, {
      driver: 'raw',
      'node-name': FLASH_ID,
      'read-only': !mount.rw,
      file: { driver: 'file', filename: mount.path },
    });
  }

  private async plugPartition(dir: string): Promise<void> {
    await this.plugUsb(PARTITION_ID, {
      driver: 'vvfat',
      'node-name': PARTITION_ID,
      dir,
      floppy: false,
      rw: false,
      'read-only': true,
      label: 'KVM',
    });
  }

  /** blockdev-add, then device_add; the node goes again if the device cannot be added. */
  private async plugUsb(id: string, node: Record<string, unknown>): Promise<void> {
    await this.machine.command('blockdev-add', node);
    try {
      await this.machine.command('device_add', {
        driver: 'usb-storage',
        id,
        drive: id,
        removable: true,
        ...(this.opts.usbBus ? { bus: this.opts.usbBus } : {}),
      });
    } catch (err) {
      await this.machine.command('blockdev-del', { 'node-name': id }).catch(() => undefined);
      throw err;
    }
  }

  private async eject(): Promise<void> {
    try {
      await this.machine.command('eject', { id: CDROM_ID, force: true });
    } catch (err) {
      // An empty drive: nothing to take out.
      if (!/no medium/i.test((err as Error).message)) throw err;
    }
  }

  /** device_del, wait for DEVICE_DELETED, then blockdev-del of the node of the same name. */
  private async unplug(id: string): Promise<void> {
    let off = (): void => undefined;
    const gone = new Promise<void>((resolve) => {
      const timer = setTimeout(finish, UNPLUG_TIMEOUT_MS);
      const onEvent = (event: { event: string; data?: unknown }): void => {
        if (event.event === 'DEVICE_DELETED' && (event.data as { device?: string })?.device === id)
          finish();
      };
      function finish(): void {
        clearTimeout(timer);
        off();
        resolve();
      }
      off = () => this.machine.off('qmpEvent', onEvent);
      this.machine.on('qmpEvent', onEvent);
    });
    try {
      await this.machine.command('device_del', { id });
      await gone;
    } catch (err) {
      off();
      if ((err as { qmpClass?: string }).qmpClass !== 'DeviceNotFound') throw err;
    }
    try {
      await this.machine.command('blockdev-del', { 'node-name': id });
    } catch (err) {
      // Not there (a restart lost it): the goal is reached.
      if (!/not found|cannot find/i.test((err as Error).message)) throw err;
    }
  }

  /** A new QEMU process: plug again what was connected to the one before. */
  private async reapply(qmp: QmpClient): Promise<void> {
    const image = this.image;
    if (image && image.on !== qmp) {
      try {
        await this.plugImage(image.mount);
        image.on = qmp;
        this.log?.info({ path: image.mount.path }, 'qemu msd: image connected again after restart');
      } catch (err) {
        this.log?.warn({ err: (err as Error).message }, 'qemu msd: could not reconnect the image');
      }
    }
    const partition = this.partition;
    if (partition && partition.on !== qmp) {
      try {
        await this.plugPartition(partition.dir);
        partition.on = qmp;
      } catch (err) {
        this.log?.warn(
          { err: (err as Error).message },
          'qemu msd: could not reconnect the storage drive',
        );
      }
    }
  }
}
