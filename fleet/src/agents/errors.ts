/**
 * The relay's errors, in the device server's family (server/src/errors.ts: the wire name is the
 * class name, the status comes with the class, the kvmd envelope is built by its `toHttp`).
 */
import { ApiError } from '../../../server/src/errors';

/** 502: the device's agent socket is on no replica (offline), or it went while answering. */
export class DeviceOfflineError extends ApiError {
  override readonly status: number = 502;
  static override readonly defaultMessage: string = 'The device is offline';
}

/** 504: the device is connected but did not answer in time. */
export class DeviceTimeoutError extends ApiError {
  override readonly status: number = 504;
  static override readonly defaultMessage: string = 'The device did not answer in time';
}

/** 503: the device's socket carries as many streams as it may (AGENT_MAX_STREAMS). */
export class DeviceBusyError extends ApiError {
  override readonly status: number = 503;
  static override readonly defaultMessage: string =
    'The device has too many open connections; try again';
}

/** 502: the device answered a command with an error of its own. */
export class DeviceCommandError extends ApiError {
  override readonly status: number = 502;
}

/** A tunnelled socket the device's server refused: its status (4xx/5xx), else 502. */
export class DeviceRefusedError extends ApiError {
  constructor(
    override readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
