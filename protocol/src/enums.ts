/** Enumerations of SPEC.md section 3. */

export const LANGUAGES = ['en', 'zh'] as const;
export type Language = (typeof LANGUAGES)[number];
/** SPEC 1: English is the default language. */
export const DEFAULT_LANGUAGE: Language = 'en';

export const SCROLL_MODES = ['STANDARD', 'VERTICAL', 'HORIZONTAL', 'BOTH'] as const;
export type ScrollMode = (typeof SCROLL_MODES)[number];

export const MOUSE_MODES = ['absolute', 'relative'] as const;
export type MouseMode = (typeof MOUSE_MODES)[number];

export const VIDEO_MODES = ['webrtc', 'direct_h264'] as const;
export type VideoMode = (typeof VIDEO_MODES)[number];

export const VIDEO_PROCESSING = ['quality_first', 'low_latency_first'] as const;
export type VideoProcessing = (typeof VIDEO_PROCESSING)[number];

export const ORIENTATIONS = [0, 90, 180, 270] as const;
export type Orientation = (typeof ORIENTATIONS)[number];

/** SPEC 3: theme_mode 0 light, 1 dark. */
export const THEME_MODES = [0, 1] as const;
export type ThemeMode = (typeof THEME_MODES)[number];

export const FINGERBOT_STRENGTHS = ['LOW', 'HIGH'] as const;
export type FingerbotStrength = (typeof FINGERBOT_STRENGTHS)[number];

/**
 * SPEC 3: quality levels 1 to 4 (low, medium, high, ultra-high), stored by name; each maps to
 * the stream quality preset of the same position (0 = 500 kbit/s gop 30 ... 3 = 8000/60).
 */
export const STREAM_QUALITIES = ['LOW', 'MEDIUM', 'HIGH', 'ULTRA_HIGH'] as const;
export type StreamQuality = (typeof STREAM_QUALITIES)[number];
export const STREAM_QUALITY_PRESETS: Record<
  StreamQuality,
  { h264_bitrate: number; h264_gop: number }
> = {
  LOW: { h264_bitrate: 500, h264_gop: 30 },
  MEDIUM: { h264_bitrate: 2000, h264_gop: 30 },
  HIGH: { h264_bitrate: 5000, h264_gop: 60 },
  ULTRA_HIGH: { h264_bitrate: 8000, h264_gop: 60 },
};

export const MSD_MODES = ['flash', 'cdrom'] as const;
export type MsdMode = (typeof MSD_MODES)[number];

export const DEVICE_MODELS = ['RM1', 'RM1PE', 'RM10'] as const;
export type DeviceModel = (typeof DEVICE_MODELS)[number];

/**
 * The keymaps of SPEC 3 (QEMU's 34 layouts plus en-us-altgr-intl: 35, wire-protocol.md 6).
 */
export const KEYMAPS = [
  'ar',
  'bepo',
  'cz',
  'da',
  'de',
  'de-ch',
  'en-gb',
  'en-us',
  'en-us-altgr-intl',
  'es',
  'et',
  'fi',
  'fo',
  'fr',
  'fr-be',
  'fr-ca',
  'fr-ch',
  'hr',
  'hu',
  'is',
  'it',
  'ja',
  'lt',
  'lv',
  'mk',
  'nl',
  'no',
  'pl',
  'pt',
  'pt-br',
  'ru',
  'sl',
  'sv',
  'th',
  'tr',
] as const;
export type Keymap = (typeof KEYMAPS)[number];
export const DEFAULT_KEYMAP: Keymap = 'en-us';

/** SPEC 3: built-in shortcuts, as KeyboardEvent.code names. */
export const BUILTIN_SHORTCUTS: ReadonlyArray<{ label: string; keys: readonly string[] }> = [
  { label: 'Ctrl+Alt+Del', keys: ['ControlLeft', 'AltLeft', 'Delete'] },
  { label: 'Alt+Shift', keys: ['AltLeft', 'ShiftLeft'] },
  { label: 'Alt+Tab', keys: ['AltLeft', 'Tab'] },
  { label: 'Alt+F4', keys: ['AltLeft', 'F4'] },
  { label: 'Ctrl+W', keys: ['ControlLeft', 'KeyW'] },
  { label: 'Win+P', keys: ['MetaLeft', 'KeyP'] },
];
