/** The display identity (EDID) the remote computer sees (issue 11, docs/system.md). */
/** The preferred mode an EDID asks for. */
export interface DisplayMode {
  width: number;
  height: number;
  hz: number;
}

export interface DisplayDriver {
  readonly name: string;
  /** See `EdidState.applies` in the protocol. */
  readonly applies: 'now' | 'power_cycle' | 'none';
  /** Hands the EDID (256 bytes) and its preferred mode to the display; may take effect later. */
  apply(edid: Buffer, mode: DisplayMode): Promise<void>;
  /** True while an applied EDID waits for the remote computer's next power cycle. */
  pending(): boolean;
  /** The mode the remote computer sees now, or null when unknown. */
  current(): DisplayMode | null;
  /**
   * The EDID the display device holds now, read back from it (a capture device's receiver);
   * absent where nothing can be read back (QEMU, the testbed). Null: it holds none.
   */
  readBack?(): Promise<Buffer | null>;
  init(): Promise<void>;
  dispose(): Promise<void>;
}
