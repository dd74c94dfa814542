/**
 * The mass-storage driver: lends a file of the storage to the remote computer as a CD-ROM or a
 * flash drive, and (GL's "partition") the storage folder itself as a second, read-only disk.
 * The MSD service in front of it owns the storage, the names, the selection and the busy
 * region; the driver only plugs and unplugs, one call at a time.
 *
 * | call                  | before                | after                               |
 * |-----------------------|-----------------------|-------------------------------------|
 * | connectImage(m)       | no image lent         | `m.path` seen by the remote computer |
 * | disconnectImage()     | an image lent         | nothing in the drive                 |
 * | connectPartition(dir) | no partition lent     | `dir` seen as a read-only disk       |
 * | disconnectPartition() | the partition lent    | the second disk gone                 |
 *
 * A failed call rejects with an Error whose message says why (it reaches the admin) and leaves
 * the drive as it was before the call. After its own restart (a QEMU crash, a USB gadget reset)
 * the driver re-lends by itself whatever is connected.
 */
export interface MsdDriverState {
  /** The driver can lend media right now (the VM runs, the gadget is bound). */
  online: boolean;
}

export interface MsdImageMount {
  /** Absolute path of the image file. */
  path: string;
  /** CD-ROM (always read-only) or flash drive. */
  cdrom: boolean;
  /** Flash drive only: the remote computer may write to it. */
  rw: boolean;
}

export interface MsdDriver {
  readonly name: string;
  getState(): MsdDriverState;
  onState(listener: (state: MsdDriverState) => void): () => void;
  connectImage(image: MsdImageMount): Promise<void>;
  disconnectImage(): Promise<void>;
  /** Lends the folder `dir` (the storage) as a read-only disk. */
  connectPartition(dir: string): Promise<void>;
  disconnectPartition(): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}
