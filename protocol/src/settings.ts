/**
 * The per-user settings the console keeps on the server (SPEC 3, "Settings stored per user on
 * the server"; wire-protocol.md 5.2). The object is read and written whole. Unknown keys are
 * kept as they are; known keys are checked here, by the server on `set_config` and by the
 * console before it sends.
 */
import * as z from './zod';
import {
  FINGERBOT_STRENGTHS,
  KEYMAPS,
  LANGUAGES,
  ORIENTATIONS,
  SCROLL_MODES,
  STREAM_QUALITIES,
  VIDEO_MODES,
  VIDEO_PROCESSING,
  type FingerbotStrength,
  type Keymap,
  type Language,
  type Orientation,
  type ScrollMode,
  type StreamQuality,
  type ThemeMode,
  type VideoMode,
  type VideoProcessing,
} from './enums';

/** SPEC 5/9: at most 30 shortcuts, each of 2 to 4 keys, none empty, no duplicate keys. */
export const SHORTCUTS_MAX = 30;
export const SHORTCUT_KEYS_MIN = 2;
export const SHORTCUT_KEYS_MAX = 4;

export interface Shortcut {
  keys: string[];
  label?: string;
}

export const shortcutSchema = z.looseObject({
  keys: z.array(z.string().check(z.trim(), z.minLength(1, 'key cannot be empty'))).check(
    z.minLength(SHORTCUT_KEYS_MIN),
    z.maxLength(SHORTCUT_KEYS_MAX),
    z.refine((keys: string[]) => new Set(keys).size === keys.length, 'duplicate keys'),
  ),
  label: z.optional(z.string().check(z.maxLength(64))),
});

const literalUnion = <T extends readonly (string | number)[]>(values: T) =>
  z.custom<T[number]>((v) => (values as readonly unknown[]).includes(v), {
    message: `must be one of ${values.join(', ')}`,
  });

/** Schema of every known key. Each is optional on input: a missing key takes its default. */
export const userConfigShape = {
  shortcuts: z.array(shortcutSchema).check(
    z.maxLength(SHORTCUTS_MAX),
    z.refine(
      (list: Shortcut[]) => new Set(list.map((s) => s.keys.join('+'))).size === list.length,
      'duplicate shortcuts',
    ),
  ),
  orientation: literalUnion(ORIENTATIONS),
  stream_quality: literalUnion(STREAM_QUALITIES),
  video_mode: literalUnion(VIDEO_MODES),
  show_cursor: z.boolean(),
  mouse_polling: z.number().check(z.int(), z.gte(10), z.lte(100)),
  mouse_control: z.boolean(),
  relative_sense: z.number().check(z.int(), z.gte(1), z.lte(100)),
  scroll_rate: z.number().check(z.int(), z.gte(1), z.lte(127)),
  reverse_scrolling: literalUnion(SCROLL_MODES),
  mic_on: z.boolean(),
  keyboard_control: z.boolean(),
  theme_mode: literalUnion([0, 1] as const),
  mouse_jiggle: z.boolean(),
  keymap: literalUnion(KEYMAPS),
  got_muted_panel_tip: z.boolean(),
  is_absolute_mouse: z.boolean(),
  fingerbot_strength: literalUnion(FINGERBOT_STRENGTHS),
  language: literalUnion(LANGUAGES),
  video_processing: literalUnion(VIDEO_PROCESSING),
} as const;

export interface UserConfig {
  shortcuts: Shortcut[];
  orientation: Orientation;
  stream_quality: StreamQuality;
  video_mode: VideoMode;
  show_cursor: boolean;
  mouse_polling: number;
  mouse_control: boolean;
  relative_sense: number;
  scroll_rate: number;
  reverse_scrolling: ScrollMode;
  mic_on: boolean;
  keyboard_control: boolean;
  theme_mode: ThemeMode;
  mouse_jiggle: boolean;
  keymap: Keymap;
  got_muted_panel_tip: boolean;
  is_absolute_mouse: boolean;
  fingerbot_strength: FingerbotStrength;
  language: Language;
  video_processing: VideoProcessing;
  /** Unknown keys written by other clients are kept. */
  [extra: string]: unknown;
}

/** SPEC 3 defaults. */
export const USER_CONFIG_DEFAULTS: Readonly<UserConfig> = Object.freeze({
  shortcuts: [],
  orientation: 0,
  stream_quality: 'MEDIUM',
  video_mode: 'webrtc',
  show_cursor: true,
  mouse_polling: 10,
  mouse_control: true,
  relative_sense: 10,
  scroll_rate: 5,
  reverse_scrolling: 'STANDARD',
  mic_on: false,
  keyboard_control: true,
  theme_mode: 0,
  mouse_jiggle: false,
  keymap: 'en-us',
  got_muted_panel_tip: false,
  is_absolute_mouse: true,
  fingerbot_strength: 'LOW',
  language: 'en',
  video_processing: 'quality_first',
});

export type UserConfigKey = keyof typeof userConfigShape;
export const USER_CONFIG_KEYS = Object.keys(userConfigShape) as UserConfigKey[];

export interface ConfigIssue {
  /** Dotted key path, e.g. `shortcuts.2.keys`. */
  path: string;
  message: string;
}

/**
 * Bounds of the stored blob (issue 9, item 13): the known keys nest 4 deep (`shortcuts.N.keys.N`),
 * so 8 leaves room for other clients' keys; a deeper document costs quadratic bytes once
 * indented (6 KB of `[[[[...` became 18 MB on disk). The size is of the compact JSON text.
 */
export const USER_CONFIG_MAX_DEPTH = 8;
export const USER_CONFIG_MAX_BYTES = 64 * 1024;

/** Whether `value` nests objects/arrays deeper than `max` (the top level counts as 1). */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  // Iterative, so a hostile document cannot overflow the stack while being measured.
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) return true;
    for (const child of Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** UTF-8 length of a string (this package has neither node:buffer nor the DOM's TextEncoder). */
function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      // a surrogate pair is one 4-byte character
      n += 4;
      i += 1;
    } else n += 3;
  }
  return n;
}

/** The depth and size bounds alone; null when within them. */
export function userConfigBoundsIssue(input: unknown): ConfigIssue | null {
  if (nestsDeeperThan(input, USER_CONFIG_MAX_DEPTH)) {
    return { path: '', message: `Configuration nests deeper than ${USER_CONFIG_MAX_DEPTH} levels` };
  }
  const bytes = utf8Length(JSON.stringify(input) ?? '');
  if (bytes > USER_CONFIG_MAX_BYTES) {
    return {
      path: '',
      message: `Configuration is ${bytes} bytes; at most ${USER_CONFIG_MAX_BYTES} are kept`,
    };
  }
  return null;
}

/**
 * Checks the known keys present in `input`. Returns the issues found (empty when valid).
 * A value that is not a plain object, or one over the depth or size bound, is one issue with
 * an empty path.
 */
export function checkUserConfig(input: unknown): ConfigIssue[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return [{ path: '', message: 'Configuration data must be in JSON object format' }];
  }
  const bounds = userConfigBoundsIssue(input);
  if (bounds) return [bounds];
  const issues: ConfigIssue[] = [];
  const record = input as Record<string, unknown>;
  for (const key of USER_CONFIG_KEYS) {
    if (!(key in record)) continue;
    const parsed = userConfigShape[key].safeParse(record[key]);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        issues.push({ path: [key, ...issue.path.map(String)].join('.'), message: issue.message });
      }
    }
  }
  return issues;
}

/**
 * Fills the defaults in: known keys that are missing or invalid take their default value,
 * unknown keys are kept. Used when reading a stored blob that an older version wrote.
 */
export function normalizeUserConfig(input: unknown): UserConfig {
  const record =
    typeof input === 'object' && input !== null && !Array.isArray(input)
      ? (input as Record<string, unknown>)
      : {};
  const out: Record<string, unknown> = { ...record };
  for (const key of USER_CONFIG_KEYS) {
    const parsed = userConfigShape[key].safeParse(record[key]);
    out[key] = parsed.success
      ? parsed.data
      : (JSON.parse(JSON.stringify(USER_CONFIG_DEFAULTS[key])) as unknown);
  }
  return out as UserConfig;
}
