/**
 * The browser's microphone (issue 14): getUserMedia({audio:true}) and what a refusal means to
 * the user (SPEC 8 'microphone access denied'; SPEC 8's library conditions 'no capture device'
 * and 'getUserMedia unavailable').
 */

/** Why the microphone could not be captured. */
export type MicError = 'denied' | 'noDevice' | 'unsupported' | 'failed';

export class MicCaptureError extends Error {
  override readonly name = 'MicCaptureError';
  constructor(
    readonly reason: MicError,
    options?: { cause?: unknown },
  ) {
    super(`microphone: ${reason}`, options);
  }
}

/** The DOMException names of getUserMedia (and their pre-standard spellings). */
export function micErrorOf(error: unknown): MicError {
  const name = (error as { name?: unknown } | null)?.name;
  switch (name) {
    case 'NotAllowedError':
    case 'PermissionDeniedError':
    case 'SecurityError':
      return 'denied';
    case 'NotFoundError':
    case 'DevicesNotFoundError':
    case 'OverconstrainedError':
      return 'noDevice';
    default:
      return 'failed';
  }
}

export type MediaDevicesLike = Pick<MediaDevices, 'getUserMedia'>;

/**
 * One microphone stream. `media` undefined: the page is not a secure context (plain http on a
 * LAN address), where browsers leave navigator.mediaDevices out.
 */
export async function captureMicrophone(media: MediaDevicesLike | undefined): Promise<MediaStream> {
  if (!media || typeof media.getUserMedia !== 'function') {
    throw new MicCaptureError('unsupported');
  }
  let stream: MediaStream;
  try {
    stream = await media.getUserMedia({ audio: true, video: false });
  } catch (err) {
    throw new MicCaptureError(micErrorOf(err), { cause: err });
  }
  if (stream.getAudioTracks().length === 0) {
    for (const track of stream.getTracks()) track.stop();
    throw new MicCaptureError('noDevice');
  }
  return stream;
}
