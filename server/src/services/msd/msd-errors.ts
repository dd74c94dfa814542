/**
 * The MSD error classes (kvmd `plugins/msd/__init__.py` names, wire-protocol.md 1.6). Each
 * extends the category base that carries its status (errors.ts); the wire name is the class
 * name, so these names are the wire and must not change.
 */
import {
  BadRequestError,
  ConflictError,
  InsufficientStorageError,
  InternalError,
  IsBusyError,
} from '../../errors';

/** 409: the MSD region (a plug, a format, a remove) or the transfer slot is taken. */
export class MsdIsBusyError extends IsBusyError {
  static override readonly defaultMessage =
    'Performing another MSD operation, please try again later';
}

export class MsdOfflineError extends BadRequestError {
  static override readonly defaultMessage = 'MSD is not found';
}

export class MsdDisabledError extends BadRequestError {
  static override readonly defaultMessage = 'MSD is disabled';
}

export class MsdConnectedError extends BadRequestError {
  static override readonly defaultMessage =
    "MSD is connected to Server, but shouldn't for this operation";
}

export class MsdDisconnectedError extends BadRequestError {
  static override readonly defaultMessage =
    'MSD is disconnected from Server, but should be for this operation';
}

export class MsdImageNotSelected extends BadRequestError {
  static override readonly defaultMessage = 'The image is not selected';
}

export class MsdUnknownImageError extends BadRequestError {
  static override readonly defaultMessage = 'The image is not found in the storage';
}

export class MsdImageExistsError extends BadRequestError {
  static override readonly defaultMessage = 'This image already exists';
}

export class MsdImageInUseError extends BadRequestError {
  static override readonly defaultMessage = 'The image is in use: disconnect it first';
}

/** 507 (GL): the storage has less room than the image needs, or filled up while writing. */
export class MsdNoSpaceError extends InsufficientStorageError {
  static override readonly defaultMessage = 'The storage space is insufficient';
}

/**
 * 500: the driver could not lend the image (QEMU refused the file, the gadget refused a tiny
 * CD-ROM image). The console answers it with 'Ensure your file can be mounted as an iso format'.
 */
export class MsdConnectError extends InternalError {
  constructor(reason: string) {
    super(`The image could not be connected: ${reason}`);
  }
}

/** 500: the driver could not take the image (or the storage drive) back. */
export class MsdDisconnectError extends InternalError {
  constructor(reason: string) {
    super(`The drive could not be disconnected: ${reason}`);
  }
}

/**
 * 400: remote download failures, named as aiohttp names them (ClientConnectorError,
 * ServerTimeoutError, ClientPayloadError...), which is what kvmd clients see from a real
 * device: the one MSD error whose wire name is not its class name.
 */
export class MsdRemoteError extends BadRequestError {
  override readonly wireName: string;
  constructor(wireName: string, message: string) {
    super(message);
    this.wireName = wireName;
    this.name = wireName;
  }
}

/** 400: an upload's client stopped before its Content-Length (aiohttp's name, as kvmd says). */
export class ClientPayloadError extends BadRequestError {}

/**
 * A transfer stopped by the device, not by its client: 409 when `msd/reset` (or a cancel)
 * stopped it, 503 when the server is stopping. The partial file follows remove_incomplete.
 */
export class MsdTransferAbortedError extends ConflictError {
  override readonly status: number;
  constructor(message: string, status: 409 | 503 = 409) {
    super(message);
    this.status = status;
  }
}

/**
 * 400: write_remote's URL (or a redirect, or the address its name resolved to) is one the
 * device does not fetch from: loopback, link-local, unspecified, multicast, broadcast, the
 * device's own addresses, and private LAN ranges unless `msd.remote.allow_lan` (docs/msd.md).
 */
export class MsdRemoteRefusedError extends BadRequestError {}

/**
 * 400: the storage holds a symbolic link (or a device, a socket...): the partition drive,
 * which lends the folder whole, is refused until it is gone.
 */
export class MsdStorageLinkError extends BadRequestError {
  constructor(entry: string) {
    super(
      `The storage holds '${entry}', which is not a regular file or folder (a symbolic link?): remove it first`,
    );
  }
}

/** 500: the storage itself failed while an image was written (EIO, EROFS...): not the client. */
export class MsdStorageError extends InternalError {
  constructor(reason: string) {
    super(`Writing the image failed: ${reason}`);
  }
}
