/**
 * The MSD subsystem's exclusive region (kvmd's `aiotools` region), in one place. It is two
 * ExclusiveRegions so that an image can be lent while another one uploads, plus the claims on
 * image names; every MsdService verb that touches the drive or the storage enters it here.
 * A second caller is refused at once with MsdIsBusyError (409).
 *
 * | entry           | holds            | verbs                                               |
 * |-----------------|------------------|-----------------------------------------------------|
 * | enterDrive      | drive            | set_params, set_connected, remove, partition_disconnect |
 * | enterTransfer   | transfer         | write, write_remote (one transfer at a time)        |
 * | enterBoth       | drive + transfer | partition_connect, partition_format (the storage must not change under them) |
 * | enterAfterAll   | both, waiting    | reset: after whatever holds them, before anyone else |
 *
 * `busy` (the state's `busy`) is true while either part is held: kvmd shows busy during a
 * write too. A name being written or removed is claimed: a second verb on it is busy as well.
 */
import { ExclusiveRegion } from '../../sync/exclusive-region';
import { MsdIsBusyError } from './msd-errors';

export class MsdRegion {
  private readonly drive = new ExclusiveRegion(() => new MsdIsBusyError());
  private readonly transfer = new ExclusiveRegion(() => new MsdIsBusyError());
  private readonly claimed = new Set<string>();

  get busy(): boolean {
    return this.drive.busy || this.transfer.busy;
  }

  /** Listens to flips of either part; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    const offDrive = this.drive.onChange(listener);
    const offTransfer = this.transfer.onChange(listener);
    return () => {
      offDrive();
      offTransfer();
    };
  }

  enterDrive<T>(fn: () => Promise<T>): Promise<T> {
    return this.drive.enter(fn);
  }

  enterTransfer<T>(fn: () => Promise<T>): Promise<T> {
    return this.transfer.enter(fn);
  }

  enterBoth<T>(fn: () => Promise<T>): Promise<T> {
    return this.drive.enter(() => this.transfer.enter(fn));
  }

  /** `reset`: runs after the running verbs, so no plug it did not see can land after it. */
  enterAfterAll<T>(fn: () => Promise<T>): Promise<T> {
    return this.transfer.enterAfter(() => this.drive.enterAfter(fn));
  }

  /** Reserves `name` for a write or a remove; the returned function frees it. */
  claim(name: string): () => void {
    if (this.claimed.has(name)) throw new MsdIsBusyError();
    this.claimed.add(name);
    let released = false;
    return () => {
      if (!released) this.claimed.delete(name);
      released = true;
    };
  }
}
