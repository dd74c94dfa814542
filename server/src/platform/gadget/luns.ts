/**
 * The mass storage function's two drives and what they hold: `lun.0` the image drive (a CD-ROM
 * or a flash drive), `lun.1` GL's partition drive (the board's block device, read-only). What is
 * lent is kept here so a rebuild of the gadget lends it again. platform.ts runs these one at a
 * time (its queue) and enumerates the gadget again when lun.0's type changes.
 */
import { join } from 'node:path';
import type { Logger } from '../../log';
import {
  ejectLun,
  makeMsdFunction,
  MSD_FN,
  writeLun,
  type GadgetImage,
  type GadgetSettings,
} from './composite';
import type { GadgetFs } from './configfs';

export class GadgetLuns {
  /** What lun.0 / lun.1 hold. */
  image: GadgetImage | null = null;
  partition: string | null = null;
  /** lun.0's type when the remote computer last enumerated the gadget. */
  enumeratedCdrom = true;
  /** lun.0's type while it is empty (start_cdrom / start_flash, then the last image's). */
  emptyCdrom = true;

  constructor(
    private readonly fs: GadgetFs,
    private readonly log: Logger,
    private readonly inquiry: () => GadgetSettings['inquiry'],
  ) {}

  lunDir(gadgetDir: string, n: 0 | 1): string {
    return join(gadgetDir, 'functions', MSD_FN, `lun.${n}`);
  }

  /** Makes the function (composite.ts) and lends again what was lent before a rebuild. */
  async make(gadgetDir: string): Promise<void> {
    const image = this.image;
    const cdrom = image ? image.cdrom : this.emptyCdrom;
    await makeMsdFunction(
      this.fs,
      gadgetDir,
      { cdrom, ro: image ? image.cdrom || !image.rw : cdrom },
      this.inquiry(),
    );
    this.enumeratedCdrom = this.image ? this.image.cdrom : this.emptyCdrom;
    // what was lent before the rebuild is lent again (a file gone since is dropped, said)
    if (this.image) {
      await this.fs
        .writeFile(join(this.lunDir(gadgetDir, 0), 'file'), this.image.path)
        .catch((err: Error) => {
          this.log.warn(
            { path: this.image?.path, err: err.message },
            'gadget: image not lent again',
          );
          this.image = null;
        });
    }
    if (this.partition) {
      await this.fs
        .writeFile(join(this.lunDir(gadgetDir, 1), 'file'), this.partition)
        .catch((err: Error) => {
          this.log.warn(
            { device: this.partition, err: err.message },
            'gadget: partition not lent again',
          );
          this.partition = null;
        });
    }
  }

  /** lun.0 takes the image; the previous one, its type and its file stay if this fails. */
  async lendImage(gadgetDir: string, image: GadgetImage): Promise<void> {
    const lun = this.lunDir(gadgetDir, 0);
    const previous = this.image;
    const previousCdrom = this.emptyCdrom;
    try {
      await this.eject(lun);
      await this.writeLun(lun, image.cdrom, image.cdrom || !image.rw, image.path);
    } catch (err) {
      await this.eject(lun).catch(() => undefined);
      await this.writeLun(
        lun,
        previous?.cdrom ?? previousCdrom,
        previous ? previous.cdrom || !previous.rw : previousCdrom,
        previous?.path ?? null,
      ).catch(() => undefined);
      throw new Error(`The drive did not take ${image.path}: ${(err as Error).message}`);
    }
    this.image = { ...image };
    this.emptyCdrom = image.cdrom;
  }

  /** `made`: the function exists (else only what is kept is dropped). */
  async ejectImage(gadgetDir: string, made: boolean): Promise<void> {
    if (made) await this.eject(this.lunDir(gadgetDir, 0));
    this.image = null;
  }

  /** lun.1 takes the board's block device, read-only. */
  async lendPartition(gadgetDir: string, device: string): Promise<void> {
    const lun = this.lunDir(gadgetDir, 1);
    try {
      await this.eject(lun);
      await this.fs.writeFile(join(lun, 'file'), device);
    } catch (err) {
      await this.eject(lun).catch(() => undefined);
      throw new Error(`The drive did not take ${device}: ${(err as Error).message}`);
    }
    this.partition = device;
  }

  async ejectPartition(gadgetDir: string, made: boolean): Promise<void> {
    if (made) await this.eject(this.lunDir(gadgetDir, 1));
    this.partition = null;
  }

  private writeLun(lun: string, cdrom: boolean, ro: boolean, file: string | null): Promise<void> {
    return writeLun(this.fs, lun, cdrom, ro, file, this.inquiry());
  }

  private eject(lun: string): Promise<void> {
    return ejectLun(this.fs, lun);
  }
}
