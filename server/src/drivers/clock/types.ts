/** The device clock and its time zone (issue 11). */

/** Where the IANA zone files are (Debian's tzdata). */
export const ZONEINFO_DIR = '/usr/share/zoneinfo';

export interface ClockDriver {
  readonly name: string;
  /** `system`: the real clock; `offset`: a developer target's clock kept as an offset. */
  readonly kind: 'system' | 'offset';
  /** Unix ms of the device clock. */
  now(): number;
  /** The IANA name of the zone in force (`Etc/GMT-8`, `Europe/Berlin`, `UTC`). */
  zone(): Promise<string>;
  setZone(name: string): Promise<void>;
  /** Sets the device clock to unix ms. */
  setTime(unixMs: number): Promise<void>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}
