/** The fingerbot, a Bluetooth button pusher (wire-protocol.md 5.7; SPEC 3, 5, 7, 9). */

/** angle_enum: 1 presses lightly (LOW), 2 firmly (HIGH). */
export const FINGERBOT_ANGLES = { LOW: 1, HIGH: 2 } as const;

/** The console's press time, seconds (SPEC 5). */
export const FINGERBOT_PRESS_S = { min: 1, max: 60 } as const;
/** The device's press_time argument, milliseconds (GL accepts 100..60000). */
export const FINGERBOT_PRESS_MS = { min: 100, max: 60_000 } as const;
/** SPEC 9: a click may take 8 s plus the press time; a firmware push up to 480 s. */
export const FINGERBOT_CLICK_BUFFER_MS = 8_000;
export const FINGERBOT_UPGRADE_TIMEOUT_MS = 480_000;
/** The firmware package: a .zip whose manifest.json names this image. */
export const FINGERBOT_FIRMWARE_IMAGE = 'finger_robot.signed.bin';

export interface FingerbotEvent {
  exist: boolean;
}
