/**
 * Constants of SPEC.md section 9 (and the timing rules of sections 2 and 4), shared by the
 * console and the device server. Times are in milliseconds unless the name says otherwise.
 */

/** SPEC 5/9: admin password length. */
export const ADMIN_PASSWORD_MIN = 5;
export const ADMIN_PASSWORD_MAX = 63;
/** SPEC 3: the one built-in account. */
export const ADMIN_USER = 'admin';
/** SPEC 5/9: 2FA codes are exactly six digits. */
export const TWOFA_CODE_LENGTH = 6;

/** SPEC 4/9: heartbeat over the event socket. */
export const HEARTBEAT_PING_MS = 2_000;
export const HEARTBEAT_LOST_MS = 10_000;
/** SPEC 4/9: login status polled every 1 s while the connection is lost. */
export const LOGIN_RECHECK_MS = 1_000;
/**
 * SPEC 4/9 quick-repeat cutoff: a failed login check that comes within this long of the
 * previous failure ends the check (web/src/lib/heartbeat.ts says what follows).
 */
export const LOGIN_RECHECK_CUTOFF_MS = 5_000;
/** SPEC 2/9: init check retried every 2 s on HTTP 502. */
export const INIT_RETRY_MS = 2_000;
/** SPEC 7/9: API timeout. */
export const API_TIMEOUT_MS = 30_000;
/** SPEC 7: base prefix of cloud calls. */
export const CLOUD_BASE_PREFIX = '/cloud-basic';

/** SPEC 9: layout. */
export const SMALL_SCREEN_MAX_WIDTH = 800;
export const BREAKPOINT_MIDDLE = 1366;
export const BREAKPOINT_LARGE = 1920;
export const RESIZE_DEBOUNCE_MS = 300;
export const LEFT_PANEL_WIDTH = 320;
/** SPEC 2 main layout: the expanded toolbar's height (kept free until the toolbar renders). */
export const TOOLBAR_HEIGHT = 44;
/** SPEC 2 main layout: the status bar's height on one line (kept free until the bar renders). */
export const STATUS_BAR_MIN_HEIGHT = 28;
export const KEYBOARD_FORCE_FLOATING_MAX_HEIGHT = 600;
export const CONFIRM_DIALOG_WIDTH = 400;
/** SPEC 9: loading icon sizes. */
export const LOADING_ICON_DEFAULT_SIZE = 140;
export const LOADING_ICON_LARGE_FROM = 48;

/** SPEC 9: upload speed display cap, bytes per second. */
export const UPLOAD_SPEED_DISPLAY_CAP = 31_457_280;
/** SPEC 9: default video size when unspecified. */
export const DEFAULT_VIDEO_WIDTH = 640;
export const DEFAULT_VIDEO_HEIGHT = 480;

/** Session lifetime: 12 h by default, sliding (wire-protocol 1.2, GL default 43200 s). */
export const SESSION_EXPIRE_DEFAULT_S = 43_200;

/** wire-protocol 1.2: GL login rate limit, 10 failures in 600 s lock the client for 600 s. */
export const LOGIN_RATE_MAX_FAILURES = 10;
export const LOGIN_RATE_WINDOW_S = 600;
export const LOGIN_RATE_LOCK_S = 600;

/**
 * The kvmd version whose wire we speak: GL.iNet's fork at `kvmd.__version__ = "4.82"`
 * (wire-protocol.md 0). kvmd clients check it to know which API they talk to, so it names the
 * wire we answer in, never this product's own version (that is `product.version` in
 * `/api/info`). Sent as numbers in the event socket's `loop` event and as text in `/api/info`'s
 * `system.kvmd.version` (wire-protocol.md 1.3, 2.3).
 */
export const KVMD_COMPAT_VERSION = { major: 4, minor: 82 } as const;
/** KVMD_COMPAT_VERSION as `/api/info` writes it: `"4.82"`. */
export const KVMD_COMPAT_VERSION_TEXT = `${KVMD_COMPAT_VERSION.major}.${KVMD_COMPAT_VERSION.minor}`;

/** Local storage keys of SPEC 3. Prefixed keys carry PRODUCT_STORAGE_PREFIX. */
export const PRODUCT_STORAGE_PREFIX = 'kvm_';
export const STORAGE_KEYS = {
  authToken: 'auth_token',
  fingerbotPressTime: `${PRODUCT_STORAGE_PREFIX}fingerbot_press_time`,
  orientation: `${PRODUCT_STORAGE_PREFIX}orientation`,
  streamQuality: `${PRODUCT_STORAGE_PREFIX}stream_quality`,
  themeMode: `${PRODUCT_STORAGE_PREFIX}theme_mode`,
  language: `${PRODUCT_STORAGE_PREFIX}language`,
  keymap: 'keymap',
  msdMountedTip: 'msd_mounted_tip',
  tailscaleBindStatusPolling: 'tailscale_bind_status_polling',
  cloudBindStatusPolling: 'cloud_bind_status_polling',
  mousePollingInterval: 'mouse_polling_interval',
  relativeSens: 'relative_sens',
  scrollRate: 'scroll_rate',
  reverseScrolling: 'reverse_scrolling',
  micOn: 'mic_on',
  camOn: 'cam_on',
  videoMode: 'video_mode',
  dynamicCode: 'dynamic_code',
} as const;
