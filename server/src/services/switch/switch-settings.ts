/**
 * The PiKVM Switch settings kvmd keeps even with no Switch on the port (issue 21, item 12):
 * the LED colors (`set_colors`) and the EDID library (`edids/create|change|remove`). kvmd
 * keeps them in its persistent storage for a Switch plugged in later; here they live in
 * `<data>/switch.json`, written atomically on every change, and the `/api/switch` state shows
 * them as kvmd's does. Nothing else of a Switch exists here (no units, ports or links).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { noSwitchState, type SwitchColor, type SwitchState } from '@kvm/protocol/switch';
import { BadRequestError } from '../../errors';
import { SILENT_LOGGER, type Logger } from '../../log';
import { JsonFile } from '../../storage/json-store';
import { SerialQueue } from '../../sync/serial-queue';

export const SWITCH_COLOR_ROLES = [
  'inactive',
  'active',
  'flashing',
  'beacon',
  'bootloader',
] as const;
export type SwitchColorRole = (typeof SWITCH_COLOR_ROLES)[number];

/** Ours: EDIDs kept at most (kvmd has no bound; each is 256 bytes of hex and a name). */
export const SWITCH_EDIDS_MAX = 64;

/** kvmd: `No specified EDID ID found`. */
export class SwitchUnknownEdidError extends BadRequestError {
  static override readonly defaultMessage = 'No specified EDID ID found';
}

/** Ours: the library is full. */
export class SwitchEdidsLimitError extends BadRequestError {
  static override readonly defaultMessage = `At most ${SWITCH_EDIDS_MAX} EDIDs can be kept`;
}

interface StoredEdid {
  name: string;
  /** Upper-case hex of 128 or 256 bytes, as kvmd's `as_text()`. */
  data: string;
}

interface Stored {
  /** Roles changed from kvmd's defaults, as kvmd's color text `RRGGBB:BB:MMMM`. */
  colors: Partial<Record<SwitchColorRole, string>>;
  /** Custom EDIDs by kvmd's id (a lower-case UUID 4), in creation order. */
  edids: Record<string, StoredEdid>;
}

const COLOR_RE = /^([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2}):([0-9a-f]{2}):([0-9a-f]{4})$/i;
const HEX_RE = /^(?:[0-9A-F]{256}|[0-9A-F]{512})$/;
const ID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** kvmd's `Color.from_text`. */
export function colorFromText(text: string): SwitchColor {
  const m = COLOR_RE.exec(text);
  if (!m) throw new Error(`not a switch color: ${text}`);
  const n = (i: number) => Number.parseInt(m[i]!, 16);
  return { red: n(1), green: n(2), blue: n(3), brightness: n(4), blink_ms: n(5) };
}

/** kvmd's `EdidInfo` of an EDID (its `parsed`), or null where kvmd's parser gives up. */
export interface EdidInfo {
  mfc_id: string;
  product_id: number;
  serial: number;
  monitor_name: string | null;
  monitor_serial: string | null;
  audio: boolean;
}

/** A display descriptor's text (0xFC name, 0xFF serial): 13 bytes, trimmed; null without one. */
function descriptorText(d: Uint8Array, tag: number): string | null {
  for (const at of [54, 72, 90, 108]) {
    if (d[at + 3] === tag) {
      // kvmd decodes cp437; the printable ASCII every monitor uses is the same in latin1
      return Buffer.from(d.subarray(at + 5, at + 18))
        .toString('latin1')
        .trim();
    }
  }
  return null;
}

/** kvmd's audio test: CEA audio and speaker blocks and the basic-audio bit. */
function ceaAudio(d: Uint8Array): boolean {
  if (d.length !== 256) return false;
  const cea = d.subarray(128);
  const dtdBegin = cea[2]!;
  if (dtdBegin === 0) return false;
  let audio = false;
  let speakers = false;
  if (dtdBegin > 4) {
    let i = 4;
    while (i < dtdBegin) {
      const tag = (cea[i]! & 0b11100000) >> 5;
      const size = cea[i]! & 0b00011111;
      // kvmd's block checks: a block without tag or data makes the whole EDID unparsed
      if (tag === 0 || size === 0) throw new Error('bad CEA block');
      if (tag === 1) audio = true;
      else if (tag === 4) speakers = true;
      i += size + 1;
    }
  }
  if (dtdBegin < 4) throw new Error('bad CEA DTD offset');
  return audio && speakers && (cea[3]! & 0b01000000) !== 0;
}

export function edidInfo(hex: string): EdidInfo | null {
  const d = Uint8Array.from(Buffer.from(hex, 'hex'));
  try {
    if (d.length === 256 && (d[126] !== 1 || d[128] !== 0x02 || d[129] !== 0x03)) return null;
    const raw = (d[8]! << 8) | d[9]!;
    const letter = (v: number) => String.fromCharCode((v & 0b11111) + 0x40);
    return {
      mfc_id: letter(raw >> 10) + letter(raw >> 5) + letter(raw),
      product_id: d[10]! | (d[11]! << 8),
      serial: (d[12]! | (d[13]! << 8) | (d[14]! << 16) | (d[15]! << 24)) >>> 0,
      monitor_name: descriptorText(d, 0xfc),
      monitor_serial: descriptorText(d, 0xff),
      audio: ceaAudio(d),
    };
  } catch {
    return null;
  }
}

function parseStored(raw: unknown): Stored {
  if (raw === undefined) return { colors: {}, edids: {} };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error('not an object');
  const r = raw as { colors?: unknown; edids?: unknown };
  const colors: Stored['colors'] = {};
  if (r.colors !== undefined) {
    if (typeof r.colors !== 'object' || r.colors === null) throw new Error('colors: not an object');
    for (const [role, text] of Object.entries(r.colors)) {
      if (!(SWITCH_COLOR_ROLES as readonly string[]).includes(role)) continue;
      if (typeof text !== 'string' || !COLOR_RE.test(text)) throw new Error(`colors.${role}`);
      colors[role as SwitchColorRole] = text;
    }
  }
  const edids: Stored['edids'] = {};
  if (r.edids !== undefined) {
    if (typeof r.edids !== 'object' || r.edids === null) throw new Error('edids: not an object');
    const entries = Object.entries(r.edids);
    if (entries.length > SWITCH_EDIDS_MAX) throw new Error('edids: too many');
    for (const [id, e] of entries) {
      const edid = e as Partial<StoredEdid> | null;
      if (
        !ID_RE.test(id) ||
        typeof edid?.name !== 'string' ||
        edid.name === '' ||
        edid.name.length > 255 ||
        typeof edid.data !== 'string' ||
        !HEX_RE.test(edid.data)
      ) {
        throw new Error(`edids.${id.slice(0, 40)}`);
      }
      edids[id] = { name: edid.name, data: edid.data };
    }
  }
  return { colors, edids };
}

export class SwitchSettings {
  /** Changes run one after another, each from the state the previous one left. */
  private readonly changes = new SerialQueue();

  private constructor(
    private stored: Stored,
    private readonly file: JsonFile<Stored>,
  ) {}

  /** Reads `switch.json`; an unusable one is set aside (defaults served, a warning). */
  static async open(dataDir: string, log: Logger = SILENT_LOGGER): Promise<SwitchSettings> {
    const file = new JsonFile<Stored>(join(dataDir, 'switch.json'), parseStored, {
      maxBytes: 1024 * 1024,
    });
    const stored = await file.loadOrDefaults(() => parseStored(undefined), log, 'switch settings');
    return new SwitchSettings(stored, file);
  }

  /** kvmd's state of an empty chain with the kept colors and EDIDs. */
  state(): SwitchState {
    const state = noSwitchState();
    for (const [role, text] of Object.entries(this.stored.colors)) {
      state.colors[role as SwitchColorRole] = colorFromText(text);
    }
    for (const [id, e] of Object.entries(this.stored.edids)) {
      state.edids.all[id] = { name: e.name, data: e.data, parsed: edidInfo(e.data) };
    }
    return state;
  }

  has(id: string): boolean {
    return Object.hasOwn(this.stored.edids, id);
  }

  /** kvmd's `set_colors`: a role given as `default` goes back to kvmd's default. */
  setColors(values: Partial<Record<SwitchColorRole, string>>): Promise<void> {
    return this.changes.run(async () => {
      const colors = { ...this.stored.colors };
      for (const [role, text] of Object.entries(values)) {
        if (text.toLowerCase() === 'default') delete colors[role as SwitchColorRole];
        else colors[role as SwitchColorRole] = text.toUpperCase();
      }
      await this.save({ ...this.stored, colors });
    });
  }

  createEdid(name: string, data: string): Promise<string> {
    return this.changes.run(async () => {
      if (Object.keys(this.stored.edids).length >= SWITCH_EDIDS_MAX)
        throw new SwitchEdidsLimitError();
      const id = randomUUID().toLowerCase();
      await this.save({ ...this.stored, edids: { ...this.stored.edids, [id]: { name, data } } });
      return id;
    });
  }

  /** kvmd's `change_edid`: an empty or missing name or data keeps the old one. */
  changeEdid(id: string, name?: string, data?: string): Promise<void> {
    return this.changes.run(async () => {
      const old = this.stored.edids[id];
      if (!old) throw new SwitchUnknownEdidError();
      const edid = { name: name || old.name, data: data || old.data };
      await this.save({ ...this.stored, edids: { ...this.stored.edids, [id]: edid } });
    });
  }

  removeEdid(id: string): Promise<void> {
    return this.changes.run(async () => {
      if (!this.has(id)) throw new SwitchUnknownEdidError();
      const { [id]: _gone, ...edids } = this.stored.edids;
      await this.save({ ...this.stored, edids });
    });
  }

  /** The file first: a failed write changes nothing in memory either. */
  private async save(next: Stored): Promise<void> {
    await this.file.save(next);
    this.stored = next;
  }
}
