/** The gadget platform's options and the REBIND_GAP_MS precaution (platform.ts). */
import type { Logger } from '../../log';
import type { CommandRunner } from '../../process/run';
import type { GadgetFs } from './configfs';
import type { GadgetSettings, Uac2Spec } from './composite';
import type { UvcSpec } from './uvc';
import type { HidFunctionSpec, UdcState } from './types';

/**
 * The least time between an unbind and the next bind, a precaution: a host reads its hub's
 * port status every ~256 ms (a high-speed hub's interrupt interval; usbcore polls a root hub
 * every 250 ms), and a gadget gone for less may be seen as a glitch of a device still there.
 * (The device VM's host re-enumerated after 643-989 ms apart; shorter was not tried.)
 */
export const REBIND_GAP_MS = 500;

export interface GadgetUdcInfo {
  name: string;
  state: UdcState;
}

export interface GadgetPlatformOptions {
  /** configfs's mount point. */
  configfs: string;
  /** sysfs (`class/udc`, `dev/char`, `module`). */
  sys: string;
  /** Where `/dev/hidgN` appear. */
  dev: string;
  /** The gadget's folder name under `usb_gadget`. */
  name: string;
  /** The UDC to bind; '' = the first one. */
  udc: string;
  udcPollMs: number;
  /** The report descriptors (platform/gadget/reports.ts). */
  hid: { keyboard: HidFunctionSpec; absolute: HidFunctionSpec; relative: HidFunctionSpec };
  /** The USB sound card (UAC2) and its format; null/absent: none (issue 24). */
  uac2?: Uac2Spec | null;
  /** The webcam (UVC) the browser's camera feeds; null/absent: none (issue 24). */
  uvc?: UvcSpec | null;
  /** The stored settings to build with at start (so the start enumerates once). */
  initial?: () => Promise<Partial<GadgetSettings>>;
  fs?: GadgetFs;
  /**
   * modprobe and mount at start when configfs or libcomposite are missing; only as root and only
   * when the programs are there (a board's systemd normally did it). null: never.
   */
  setup?: { run: CommandRunner; root: boolean } | null;
  /** How long a bound function's `/dev` node may take to appear. */
  nodeWaitMs?: number;
  /** The least time the gadget stays unbound before a bind (REBIND_GAP_MS). */
  rebindGapMs?: number;
  log?: Logger;
}
