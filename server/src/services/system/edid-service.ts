/**
 * The display identity (EDID) the remote computer sees (SPEC 3 "EDID", wire-protocol.md §5.6,
 * 5.13; docs/system.md). A submitted EDID is checked whole ('Invalid EDID format' otherwise,
 * nothing saved), then saved as submitted (`<data_dir>/system/edid.txt`, atomic: GL saves before
 * it writes the chip, so `get_edid` answers what was submitted), then handed to the target's
 * display driver. A 128-byte EDID gets our CTA block appended first, as GL does.
 *
 * At start the saved EDID is applied again. With none saved, the display keeps its own native
 * mode (the VM's 1024x768, the testbed's configured size) and `edid` is '' as on a new GL device.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  EDID_INVALID_MESSAGE,
  EDID_PRESETS,
  edidPreferredMode,
  edidPresetOf,
  edidToHex,
  parseEdidHex,
  sameEdidButPhysicalAddress,
  withCtaExtension,
  type EdidPreset,
  type EdidState,
} from '@kvm/protocol';
import type { DisplayDriver, DisplayMode } from '../../drivers/display/types';
import { BadRequestError, IsBusyError } from '../../errors';
import { SILENT_LOGGER, type Logger } from '../../log';
import { atomicWriteFile } from '../../storage/atomic';
import { ExclusiveRegion } from '../../sync/exclusive-region';

/** Longest text accepted: 512 hex characters with generous whitespace (`00 ` and line breaks). */
export const EDID_TEXT_MAX = 2048;

/** 409: an EDID is being applied right now. */
export class EdidBusyError extends IsBusyError {
  static override readonly defaultMessage = 'Another EDID is being applied';
}

export const EDID_APPLIED = {
  status: 'success',
  message: 'EDID data has been written and applied',
} as const;

export interface EdidServiceOptions {
  dataDir: string;
  display: DisplayDriver;
  log?: Logger;
}

/** The 256 bytes and preferred mode of a submitted text, or null when it is not a usable EDID. */
export function checkEdid(text: unknown): { bytes: Buffer; mode: DisplayMode } | null {
  if (typeof text !== 'string' || text.length > EDID_TEXT_MAX) return null;
  const parsed = parseEdidHex(text);
  if (!parsed) return null;
  const full = withCtaExtension(parsed);
  // Without a detailed timing there is no mode to show: nothing could follow it.
  const mode = edidPreferredMode(full);
  if (!mode) return null;
  return { bytes: Buffer.from(full), mode };
}

export class EdidService {
  private readonly file: string;
  private readonly display: DisplayDriver;
  private readonly log: Logger;
  /** What was submitted last, as submitted ('' when nothing ever was). */
  private saved = '';
  /** The preferred mode of the EDID handed to the display, or null before any. */
  private mode: DisplayMode | null = null;
  /** One submit at a time: a second one answers 409 at once. */
  private readonly region = new ExclusiveRegion(() => new EdidBusyError());

  constructor(opts: EdidServiceOptions) {
    this.file = join(opts.dataDir, 'system', 'edid.txt');
    this.display = opts.display;
    this.log = opts.log ?? SILENT_LOGGER;
  }

  /** Reads the saved EDID and hands it to the display again. */
  async start(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch {
      return; // nothing saved yet
    }
    const edid = checkEdid(text);
    if (!edid) {
      this.log.warn({ file: this.file }, 'saved EDID is not valid: ignored');
      return;
    }
    this.saved = text;
    try {
      await this.display.apply(edid.bytes, edid.mode);
      this.mode = edid.mode;
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'applying the saved EDID failed');
    }
  }

  list(): readonly EdidPreset[] {
    return EDID_PRESETS;
  }

  state(): EdidState {
    return {
      edid: this.saved,
      preset: this.saved ? (edidPresetOf(this.saved)?.key ?? null) : null,
      preferred: this.mode ?? this.display.current(),
      applies: this.display.applies,
      pending: this.display.pending(),
    };
  }

  /**
   * `GET /api/upgrade/get_edid`: with a display that reads back (a capture device), `edid` is
   * what the device holds now: the text as submitted when the bytes are those, else the device's
   * bytes as hex ('' when it holds none). Without one, or when it does not answer, `state()`.
   */
  async readState(): Promise<EdidState> {
    const base = this.state();
    if (!this.display.readBack) return base;
    let held: Buffer | null;
    try {
      held = await this.display.readBack();
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'reading the EDID back failed');
      return { ...base, source: 'saved' };
    }
    const saved = this.saved ? checkEdid(this.saved) : null;
    // the submitted bytes as held by a receiver that put its CEC address in: the submitted text
    const same = saved !== null && held !== null && sameEdidButPhysicalAddress(saved.bytes, held);
    const edid = !held ? '' : same ? this.saved : edidToHex(held);
    const mode = held ? edidPreferredMode(held) : null;
    return {
      ...base,
      edid,
      preset: edid ? (edidPresetOf(edid)?.key ?? null) : null,
      preferred: this.display.current() ?? (mode ? { ...mode } : base.preferred),
      source: 'device',
    };
  }

  /**
   * `POST /api/upgrade/edid`: checks, saves, applies. One at a time (409 while one runs). A
   * failing display leaves the text saved (GL's order) and answers the failure.
   */
  async submit(text: unknown): Promise<typeof EDID_APPLIED> {
    const edid = checkEdid(text);
    if (!edid) throw new BadRequestError(EDID_INVALID_MESSAGE);
    return this.region.enter(async () => {
      await atomicWriteFile(this.file, text as string, 0o644);
      this.saved = text as string;
      await this.display.apply(edid.bytes, edid.mode);
      this.mode = edid.mode;
      this.log.info({ mode: edid.mode, pending: this.display.pending() }, 'EDID applied');
      return EDID_APPLIED;
    });
  }
}
