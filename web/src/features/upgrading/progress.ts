/** SPEC 2/9 upgrading page timing. */

/** Progress rises toward 99 % over about 82 s. */
export const UPGRADE_EXPECTED_MS = 82_000;
/** Held here until the device reports the end. */
export const UPGRADE_PROGRESS_CAP = 99;
/** Status polling starts 2 s after the page opens. */
export const UPGRADE_POLL_DELAY_MS = 2_000;

/** Shown progress (whole percent) after `elapsedMs` on the page, while not finished. */
export function upgradeProgress(elapsedMs: number): number {
  if (!(elapsedMs > 0)) return 0;
  return Math.min(
    UPGRADE_PROGRESS_CAP,
    Math.floor((elapsedMs / UPGRADE_EXPECTED_MS) * UPGRADE_PROGRESS_CAP),
  );
}

/** The device's status is asked every second once polling runs. */
export const UPGRADE_POLL_MS = 1_000;
/** SPEC 2: the reload to the root follows the success message after 1 s. */
export const UPGRADE_DONE_RELOAD_MS = 1_000;
/**
 * Back after its restart, the device's status may lack this upgrade's outcome only while the
 * launcher waits for the new version to be ready (20 s, then 10 s to kill it); past that (a
 * launcher that never wrote one) the version decides.
 */
export const UPGRADE_OUTCOME_GRACE_MS = 40_000;
/** No answer either way by then: the upgrade is reported failed (the device may need a hand). */
export const UPGRADE_GIVE_UP_MS = 10 * 60_000;
