/**
 * Sound both ways (issue 14): the remote computer's sound to the browser as Opus in the WebRTC
 * session, the browser's microphone back to the remote computer. `GET /api/audio` and the
 * `audio` event of `/api/ws` carry this state.
 */

/** Opus as the WebRTC session carries it (RFC 7587): 48 kHz, two channels, 20 ms frames. */
export const AUDIO_FORMAT = {
  codec: 'opus',
  sampleRate: 48000,
  channels: 2,
  frameMs: 20,
  /** RTP payload type of the offer's `m=audio` section (the value ustreamer's Janus uses). */
  payloadType: 111,
  /** mid of the offer's audio section (wire-protocol.md 3.2). */
  mid: 'a',
} as const;

/** SPEC 9: the microphone meter. */
export const MIC_METER = { smoothing: 0.2, intervalMs: 100, fftSize: 32 } as const;

export interface AudioState {
  /** The remote computer's sound can be listened to (WebRTC only; direct H.264 has none). */
  available: boolean;
  /**
   * Why there is no sound now, in English (the gadget's USB sound card missing while the gadget
   * is rebuilt or unbound, the VM off); null when available or not said. Absent from older
   * servers.
   */
  reason?: string | null;
  /** The sound is the testbed's generated one, not a computer's: the console says so. */
  simulated: boolean;
  /** Browsers receiving the sound now. */
  listeners: number;
  mic: {
    /** `enable_mic` as the device runs it (set_param; takes effect at the next start, as on GL). */
    enabled: boolean;
    /** The target can take a microphone at all. */
    available: boolean;
    /** A browser is sending its microphone to the remote computer now. */
    active: boolean;
  };
  camera: {
    /** The browser's camera can be sent to the remote computer (needs the UVC gadget). */
    available: boolean;
    /** Why not, in English (e.g. the QEMU target: it needs hardware). */
    reason: string | null;
    /**
     * The same as a stable code the console translates (issue 21 item 17); absent from older
     * servers, whose `reason` the console then shows as it is.
     */
    code?: CameraUnavailableCode | null;
    /** A browser is sending its camera to the remote computer now (issue 24; absent: never). */
    active?: boolean;
    /**
     * What the remote computer does with the webcam (the gadget target, issue 24): `idle` (not
     * streaming from it), `streaming` (taking frames), `stalled` (streaming on, but no frame
     * taken for 2 s: it stopped reading), `restarting` (the frame server crashed and is
     * restarted with a back-off). Null when the camera is unavailable; absent from older servers.
     */
    remote?: CameraRemoteState | null;
  };
}

export const CAMERA_REMOTE_STATES = ['idle', 'streaming', 'stalled', 'restarting'] as const;
export type CameraRemoteState = (typeof CAMERA_REMOTE_STATES)[number];

/** Why the browser's camera cannot reach the remote computer (AudioState.camera.code). */
export const CAMERA_UNAVAILABLE_CODES = [
  'no_camera_input',
  'testbed',
  'needs_hardware',
  // the gadget target without its webcam function: turned off, not made, or not bound (a USB
  // controller without isochronous endpoints, as the device VM's dummy_hcd); `reason` says which
  'uvc_unavailable',
] as const;
export type CameraUnavailableCode = (typeof CAMERA_UNAVAILABLE_CODES)[number];
