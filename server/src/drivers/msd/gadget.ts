/**
 * The gadget target's virtual media: the composite gadget's mass storage function
 * (platform/gadget/platform.ts). lun.0 is the image drive: `forced_eject`, then `cdrom`/`ro`
 * (the kernel refuses them while a file is open), `inquiry_string`, then `file`; a change of
 * the drive's type (CD-ROM or disk) re-enumerates the gadget, since the remote computer reads
 * it only then. lun.1 is GL's partition drive: the board's own block device
 * (`gadget.msd_partition_device`, SPEC's mmcblk0p10), always read-only.
 * Online = the function exists and the gadget is bound to a UDC.
 */
import { stat } from 'node:fs/promises';
import { assertRegularFile } from './lend-check';
import type { GadgetPlatform } from '../../platform/gadget/platform';
import type { MsdDriver, MsdDriverState, MsdImageMount } from './types';

export interface GadgetMsdOptions {
  /** The block device lent as GL's partition drive. */
  partitionDevice: string;
}

export class GadgetMsd implements MsdDriver {
  readonly name = 'gadget';
  private readonly listeners = new Set<(state: MsdDriverState) => void>();
  private online = false;
  private off: (() => void) | null = null;

  constructor(
    private readonly platform: GadgetPlatform,
    private readonly opts: GadgetMsdOptions,
  ) {}

  getState(): MsdDriverState {
    return { online: this.platform.msdOnline() };
  }

  onState(listener: (state: MsdDriverState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async init(): Promise<void> {
    this.off = this.platform.onChange(() => this.update());
  }

  async dispose(): Promise<void> {
    this.off?.();
    this.off = null;
  }

  async connectImage(image: MsdImageMount): Promise<void> {
    if (this.platform.luns().image) throw new Error('An image is connected already');
    await assertRegularFile(image.path);
    await this.platform.lendImage(image);
  }

  async disconnectImage(): Promise<void> {
    await this.platform.ejectImage();
  }

  /** GL's partition mode lends the board's block device; `dir` (the storage folder) is on it. */
  async connectPartition(_dir: string): Promise<void> {
    if (this.platform.luns().partition) throw new Error('The storage is connected already');
    const device = this.opts.partitionDevice;
    let st;
    try {
      st = await stat(device);
    } catch {
      throw new Error(
        `The partition ${device} does not exist on this board (config gadget.msd_partition_device)`,
      );
    }
    if (!st.isBlockDevice() && !st.isFile()) {
      throw new Error(`${device} is not a block device (config gadget.msd_partition_device)`);
    }
    await this.platform.lendPartition(device);
  }

  async disconnectPartition(): Promise<void> {
    await this.platform.ejectPartition();
  }

  private update(): void {
    const online = this.platform.msdOnline();
    if (online === this.online) return;
    this.online = online;
    for (const l of this.listeners) l({ online });
  }
}
