/**
 * The MSD error classes (kvmd `plugins/msd/__init__.py` names, wire-protocol.md 1.6): 400
 * unless noted. `toHttp()` in errors.ts maps them through their status like every ApiError.
 */
import { ApiError, BusyError } from '../../errors';

/** 409: the MSD region (a plug, a format, a remove) or the transfer slot is taken. */
export class MsdIsBusyError extends BusyError {
  constructor() {
    super('MsdIsBusyError', 'Performing another MSD operation, please try again later');
  }
}

export class MsdOfflineError extends ApiError {
  constructor() {
    super('MsdOfflineError', 400, 'MSD is not found');
  }
}

export class MsdDisabledError extends ApiError {
  constructor() {
    super('MsdDisabledError', 400, 'MSD is disabled');
  }
}

export class MsdConnectedError extends ApiError {
  constructor(message = "MSD is connected to Server, but shouldn't for this operation") {
    super('MsdConnectedError', 400, message);
  }
}

export class MsdDisconnectedError extends ApiError {
  constructor(message = 'MSD is disconnected from Server, but should be for this operation') {
    super('MsdDisconnectedError', 400, message);
  }
}

export class MsdImageNotSelected extends ApiError {
  constructor() {
    super('MsdImageNotSelected', 400, 'The image is not selected');
  }
}

export class MsdUnknownImageError extends ApiError {
  constructor(message = 'The image is not found in the storage') {
    super('MsdUnknownImageError', 400, message);
  }
}

export class MsdImageExistsError extends ApiError {
  constructor() {
    super('MsdImageExistsError', 400, 'This image already exists');
  }
}

export class MsdImageInUseError extends ApiError {
  constructor(message = 'The image is in use: disconnect it first') {
    super('MsdImageInUseError', 400, message);
  }
}

/** 507 (GL): the storage has less room than the image needs, or filled up while writing. */
export class MsdNoSpaceError extends ApiError {
  constructor(message = 'The storage space is insufficient') {
    super('MsdNoSpaceError', 507, message);
  }
}

/**
 * 500: the driver could not lend the image (QEMU refused the file, the gadget refused a tiny
 * CD-ROM image). The console answers it with 'Ensure your file can be mounted as an iso format'.
 */
export class MsdConnectError extends ApiError {
  constructor(reason: string) {
    super('MsdConnectError', 500, `The image could not be connected: ${reason}`);
  }
}

/** 500: the driver could not take the image (or the storage drive) back. */
export class MsdDisconnectError extends ApiError {
  constructor(reason: string) {
    super('MsdDisconnectError', 500, `The drive could not be disconnected: ${reason}`);
  }
}

/** Remote download failures before the stream began (aiohttp's class names, as kvmd shows them). */
export class MsdRemoteError extends ApiError {
  constructor(wireName: string, message: string) {
    super(wireName, 400, message);
  }
}

/**
 * A transfer stopped by the device, not by its client: 409 when `msd/reset` (or a cancel)
 * stopped it, 503 when the server is stopping. The partial file follows remove_incomplete.
 */
export class MsdTransferAbortedError extends ApiError {
  constructor(message: string, status: 409 | 503 = 409) {
    super('MsdTransferAbortedError', status, message);
  }
}

/**
 * 400: write_remote's URL (or a redirect, or the address its name resolved to) is one the
 * device does not fetch from: loopback, link-local, unspecified, multicast, broadcast, the
 * device's own addresses, and private LAN ranges unless `msd.remote.allow_lan` (docs/msd.md).
 */
export class MsdRemoteRefusedError extends ApiError {
  constructor(message: string) {
    super('MsdRemoteRefusedError', 400, message);
  }
}

/**
 * 400: the storage holds a symbolic link (or a device, a socket...): the partition drive,
 * which lends the folder whole, is refused until it is gone.
 */
export class MsdStorageLinkError extends ApiError {
  constructor(entry: string) {
    super(
      'MsdStorageLinkError',
      400,
      `The storage holds '${entry}', which is not a regular file or folder (a symbolic link?): remove it first`,
    );
  }
}

/** 500: the storage itself failed while an image was written (EIO, EROFS...): not the client. */
export class MsdStorageError extends ApiError {
  constructor(reason: string) {
    super('MsdStorageError', 500, `Writing the image failed: ${reason}`);
  }
}
