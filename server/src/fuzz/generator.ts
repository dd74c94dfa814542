/**
 * What the fuzzer sends: HTTP requests for every route of the app's own route table (plus
 * unknown paths and methods) and frames for the three sockets, drawn from a seeded Prng.
 * Pure: no I/O here, so the in-process test and the long run against the real server send the
 * same inputs for the same seed. Targets: loopback only (write_remote's `url` comes from a
 * closed list of loopback and malformed addresses, never from mutation).
 */
import type { Prng } from './prng';

export interface RouteSpec {
  method: string;
  url: string;
  public: boolean;
  websocket: boolean;
}

/** Which credentials the runner puts on a request (it holds the real ones). */
export type AuthMode =
  'token-header' | 'cookie' | 'query' | 'none' | 'garbage-token' | 'kvmd-right' | 'kvmd-wrong';

export interface FuzzRequest {
  method: string;
  /** Path and query, as sent on the request line (may hold deliberately broken escapes). */
  url: string;
  headers: Record<string, string>;
  body: Buffer | null;
  auth: AuthMode;
  /** The route-table entry this was made for (`POST /api/x`), or `unknown`. */
  route: string;
  /** Content-Length that disagrees with the body (raw HTTP only; in-process it is dropped). */
  lengthLie: number | null;
  /** The route may legitimately take long (a press held, text typed slowly, a download). */
  mayBeSlow: boolean;
  /** Logout: the runner sends it with a throwaway session so the run's own one survives. */
  endsSession: boolean;
}

export type SocketKind = 'ws' | 'media' | 'janus';

export const SOCKET_PATHS: Record<SocketKind, string> = {
  ws: '/api/ws',
  media: '/api/media/ws',
  janus: '/janus/ws',
};

export interface FuzzFrame {
  socket: SocketKind;
  data: string | Buffer;
  binary: boolean;
}

/** Known argument names per route (from the route code and docs/api.md, docs/msd.md). */
const PARAMS: Record<string, readonly string[]> = {
  '/api/auth/login': ['user', 'passwd', 'expire'],
  '/api/auth/login_with_2fa': ['user', 'passwd', 'code', 'remember', 'expire'],
  '/api/init/init': ['password'],
  '/api/init/change_password': ['user', 'old_password', 'new_password'],
  '/api/2fa/init': ['secret', 'key'],
  '/api/2fa/verify': ['code'],
  '/api/2fa/delete': ['code'],
  '/api/info': ['fields'],
  '/api/ws': ['stream'],
  '/api/streamer/set_params': [
    'h264_bitrate',
    'h264_gop',
    'desired_fps',
    'video_processing',
    'quality',
  ],
  '/api/hid/set_params': ['mouse_output', 'jiggler', 'keyboard_output'],
  '/api/hid/set_connected': ['connected'],
  '/api/hid/keymap': ['name'],
  '/api/hid/print': ['limit', 'keymap', 'slow', 'delay'],
  '/api/hid/events/send_key': ['key', 'state', 'finish'],
  '/api/hid/events/send_shortcut': ['keys'],
  '/api/hid/events/send_mouse_button': ['button', 'state'],
  '/api/hid/events/send_mouse_move': ['to_x', 'to_y'],
  '/api/hid/events/send_mouse_relative': ['delta_x', 'delta_y'],
  '/api/hid/events/send_mouse_wheel': ['delta_x', 'delta_y'],
  '/api/atx/click': ['button', 'wait'],
  '/api/atx/power': ['action', 'wait'],
  '/api/wol/add': ['name', 'mac'],
  '/api/wol/rename': ['mac', 'name'],
  '/api/wol/remove': ['mac'],
  '/api/wol/wake': ['mac'],
  '/api/fingerbot/click': ['press_time', 'angle_enum'],
  '/api/msd/set_params': ['image', 'cdrom', 'rw'],
  '/api/msd/set_connected': ['connected'],
  '/api/msd/remove': ['image'],
  '/api/msd/set_enabled': ['enabled'],
  '/api/msd/partition_connect': ['path'],
  '/api/msd/read': ['image', 'compress'],
  '/api/msd/write': ['image', 'prefix', 'remove_incomplete'],
  '/api/msd/write_remote': ['url', 'image', 'prefix', 'insecure', 'timeout', 'remove_incomplete'],
};

/** Routes whose answer may legitimately take seconds. */
const SLOW_ROUTES = new Set([
  // ustreamer's MJPEG stream never ends by design (it runs until the client leaves)
  '/streamer/stream',
  '/api/fingerbot/click',
  '/api/atx/click',
  '/api/atx/power',
  '/api/hid/print',
  '/api/hid/set_params',
  '/api/hid/set_connected',
  '/api/msd/write',
  '/api/msd/write_remote',
  '/api/msd/set_connected',
  '/api/msd/partition_connect',
  '/api/msd/partition_format',
  '/api/streamer/set_params',
]);

/** Values a parameter may plausibly take, so some requests get past validation. */
const PLAUSIBLE: Record<string, readonly string[]> = {
  user: ['admin', 'root', ''],
  passwd: ['wrong-password', 'x', ''],
  password: ['correct horse', 'short', ''],
  old_password: ['not-the-password'],
  new_password: ['another password', 'x'],
  expire: ['0', '60', '-1', '99999999999'],
  code: ['123456', '000000', '12345'],
  key: ['KeyA', 'ShiftLeft', 'Enter', '123456', 'NoSuchKey'],
  remember: ['1', '0'],
  secret: ['JBSWY3DPEHPK3PXP', 'AAAA'],
  fields: ['system', 'auth,meta', 'system,auth,meta,extras', 'nope'],
  stream: ['0', '1', 'true'],
  h264_bitrate: ['25', '5000', '20000', '20001'],
  h264_gop: ['0', '30', '240'],
  desired_fps: ['1', '30', '60'],
  video_processing: ['quality_first', 'low_latency_first'],
  mouse_output: ['usb', 'usb_rel', 'ps2'],
  keyboard_output: ['usb', 'ps2'],
  jiggler: ['1', '0'],
  connected: ['1', '0'],
  name: ['en-us', 'de', 'pc', 'x'.repeat(64)],
  keymap: ['en-us', 'fr', 'nope'],
  limit: ['0', '1', '10', '1024'],
  slow: ['0', '1'],
  delay: ['0', '0.01', '5'],
  state: ['1', '0', 'true', 'false'],
  finish: ['1', '0'],
  keys: ['ControlLeft,AltLeft,Delete', 'KeyA', 'ShiftLeft,,KeyB'],
  button: ['left', 'right', 'middle', 'up', 'down', 'power', 'reset', 'power_long'],
  to_x: ['0', '-32768', '32767', '40000'],
  to_y: ['0', '100', '-40000'],
  delta_x: ['0', '1', '-127', '128'],
  delta_y: ['0', '-1', '127', '-128'],
  action: ['on', 'off', 'off_hard', 'reset_hard'],
  wait: ['0', '1'],
  mac: ['52:54:00:12:34:56', '52-54-00-12-34-56', 'ff:ff:ff:ff:ff:ff', '52:54:00:12:34'],
  press_time: ['100', '200', '60000', '60001', '99'],
  angle_enum: ['1', '2', '3'],
  image: ['a.iso', 'dir/b.img', 'a.iso.incomplete', '.hidden'],
  cdrom: ['1', '0'],
  rw: ['1', '0'],
  enabled: ['1', '0'],
  path: ['/dev/sda1', '/dev/mmcblk0p3', '/tmp'],
  compress: ['none', 'zstd', 'lzma'],
  prefix: ['', 'dir', 'a/b'],
  remove_incomplete: ['1', '0'],
  insecure: ['1', '0'],
  timeout: ['1', '0.1', '0', '-1', '1e9'],
};

/** write_remote's url: loopback (closed ports) or malformed only, never a public address. */
const URLS = [
  'http://127.0.0.1:1/x.iso',
  'https://127.0.0.1:1/x.iso',
  'http://[::1]:1/',
  'http://127.0.0.1:0/',
  'http://localhost:1/a',
  'ftp://127.0.0.1/x',
  'file:///etc/passwd',
  'http://',
  'http://127.0.0.1:99999/',
  'javascript:alert(1)',
  '127.0.0.1',
  '',
];

const EXTRA_NAMES = ['auth_token', 'a', '__proto__', 'constructor', 'toString', 'a[]', 'a[b]'];

const UNKNOWN_PATHS = [
  '/api/nope',
  '/api/',
  '/api',
  '/api/../etc/passwd',
  '/api/%2e%2e/%2e%2e/etc/passwd',
  '/api/msd/..%2f..%2fetc',
  '//api//info',
  '/api/info/',
  '/api/info/extra',
  '/api/%00',
  '/api/%',
  '/api/%zz',
  '/janus',
  '/janus/ws/x',
  '/index.html',
  '/../../etc/passwd',
  '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
  `/api/${'a'.repeat(300)}`,
  `/${'x/'.repeat(500)}`,
  '/favicon.ico',
];

const ODD_METHODS = ['PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'GET', 'POST'];

/** Mutated argument values: wrong types, huge, unicode, NUL, traversal, broken escapes. */
function mutatedValue(prng: Prng): string {
  switch (prng.int(0, 17)) {
    case 0:
      return '';
    case 1:
      return prng.pick(['-1', '0', '1e309', 'NaN', 'Infinity', '-0', '0x', '0xffffffffffffffff']);
    case 2:
      return '9'.repeat(prng.int(20, 400));
    case 3:
      return encodeURIComponent('x'.repeat(prng.size(200_000)));
    case 4:
      return encodeURIComponent(prng.pick(['\u202e', '😀', '\uffff', 'é', '中文', '\u0000a']));
    case 5:
      return '%ED%A0%80'; // a lone surrogate in UTF-8: invalid
    case 6:
      return prng.pick(['%00', 'a%00b', '%00%00%00']);
    case 7:
      return encodeURIComponent(prng.pick(['../../etc/passwd', '..', '/etc/passwd', 'a/../../b']));
    case 8:
      return prng.pick(['..%2F..%2Fetc', '%2e%2e', '.%2F.%2F']);
    case 9:
      return prng.pick(['%', '%z', '%E0%A4%A', '%%']);
    case 10:
      return prng.pick(['%0d%0aSet-Cookie:%20x=1', '%0a', '%09']);
    case 11:
      return prng.pick(['true', 'false', 'yes', 'no', 'null', 'undefined', '[]', '{}']);
    case 12:
      return String(prng.int(-(2 ** 31), 2 ** 31));
    case 13:
      return String(prng.next() * 10 ** prng.int(0, 20));
    case 14:
      return encodeURIComponent(prng.bytes(prng.int(1, 40)).toString('latin1'));
    case 15:
      return '+ +';
    case 16:
      return encodeURIComponent(' '.repeat(prng.int(1, 5)));
    default:
      return encodeURIComponent(prng.bytes(prng.int(1, 16)).toString('base64'));
  }
}

function valueFor(prng: Prng, name: string): string {
  if (name === 'url') return encodeURIComponent(prng.pick(URLS));
  const plausible = PLAUSIBLE[name];
  if (plausible && prng.chance(0.5)) return encodeURIComponent(prng.pick(plausible));
  return mutatedValue(prng);
}

function queryString(prng: Prng, names: readonly string[], skipUrlMutation: boolean): string {
  const parts: string[] = [];
  for (const name of names) {
    if (prng.chance(0.2)) continue; // sometimes missing
    const repeat = prng.chance(0.08) ? prng.int(2, 4) : 1; // a=1&a=2
    for (let i = 0; i < repeat; i += 1) {
      parts.push(
        `${name}=${name === 'url' && skipUrlMutation ? encodeURIComponent(prng.pick(URLS)) : valueFor(prng, name)}`,
      );
    }
  }
  if (prng.chance(0.15)) {
    parts.push(`${encodeURIComponent(prng.pick(EXTRA_NAMES))}=${mutatedValue(prng)}`);
  }
  if (prng.chance(0.03)) parts.push(prng.pick(['&', '=', '==', 'x', '&&&', '%']));
  if (prng.chance(0.02)) {
    // many parameters
    for (let i = prng.int(50, 2000); i > 0; i -= 1) parts.push(`p${i}=${i}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** JSON that is valid but of every wrong shape. */
export function wrongJson(prng: Prng, depth = 0): unknown {
  switch (prng.int(0, depth > 3 ? 6 : 11)) {
    case 0:
      return null;
    case 1:
      return prng.pick([0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1]);
    case 2:
      return prng.pick([
        '',
        'x',
        '\u0000',
        '😀',
        'a'.repeat(prng.size(depth === 0 ? 70_000 : 2_000)),
      ]);
    case 3:
      return prng.chance(0.5);
    case 4:
      return [];
    case 5:
      return {};
    case 6:
      return prng.pick(['__proto__', 'constructor', 'prototype', 'toString']);
    case 7: {
      const out: Record<string, unknown> = {};
      for (let i = prng.int(1, 6); i > 0; i -= 1) {
        out[prng.pick(['a', 'event', 'type', 'x', 'id', '__proto__', 'constructor', 'keys'])] =
          wrongJson(prng, depth + 1);
      }
      return out;
    }
    case 8:
      return Array.from({ length: prng.int(1, 5) }, () => wrongJson(prng, depth + 1));
    case 9:
      return Array.from({ length: prng.size(depth === 0 ? 20_000 : 500) }, (_, i) => i);
    case 10:
      return { shortcuts: [{ keys: wrongJson(prng, depth + 1) }], x: wrongJson(prng, depth + 1) };
    default:
      return { ['__proto__']: { polluted: true }, constructor: { prototype: { p: 1 } } };
  }
}

/** Deeply nested JSON text (objects or arrays), without building it as an object. */
function deepJson(prng: Prng): string {
  const depth = prng.pick([100, 1000, 5000, 20_000, 100_000]);
  return prng.chance(0.5)
    ? `${'['.repeat(depth)}${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

function multipart(prng: Prng, names: readonly string[]): { type: string; body: Buffer } {
  const boundary = `----fuzz${prng.int(0, 1e9)}`;
  const parts: string[] = [];
  const fields = [...names, 'file', 'x'];
  for (let i = prng.int(0, prng.chance(0.05) ? 60 : 6); i > 0; i -= 1) {
    const name = prng.pick(fields);
    const file = prng.chance(0.3);
    parts.push(
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${
        file ? `; filename="${prng.pick(['a.zip', '../../x', 'é.bin', ''])}"` : ''
      }\r\n${file ? 'Content-Type: application/zip\r\n' : ''}\r\n${decodeSafe(mutatedValue(prng))}\r\n`,
    );
  }
  let text = `${parts.join('')}--${boundary}--\r\n`;
  let type = `multipart/form-data; boundary=${boundary}`;
  switch (prng.int(0, 6)) {
    case 0:
      text = text.slice(0, prng.int(0, text.length)); // truncated
      break;
    case 1:
      type = 'multipart/form-data'; // no boundary
      break;
    case 2:
      type = `multipart/form-data; boundary=other`; // wrong boundary
      break;
    case 3:
      text = `--${boundary}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--${boundary}--\r\n`;
      break;
    case 4:
      text = `--${boundary}\r\n\r\n\r\n`; // part without headers, never closed
      break;
    default:
      break;
  }
  return { type, body: Buffer.from(text, 'utf8') };
}

function decodeSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** A body and its Content-Type (which may lie about the body). */
function body(prng: Prng, names: readonly string[]): { body: Buffer | null; type: string | null } {
  switch (prng.int(0, 9)) {
    case 0:
      return { body: null, type: null };
    case 1: {
      const form = names.map((n) => `${n}=${valueFor(prng, n)}`).join('&');
      return { body: Buffer.from(form), type: 'application/x-www-form-urlencoded' };
    }
    case 2:
      return { body: Buffer.from(JSON.stringify(wrongJson(prng))), type: 'application/json' };
    case 3:
      return { body: Buffer.from(deepJson(prng)), type: 'application/json' };
    case 4: {
      const m = multipart(prng, names);
      return { body: m.body, type: m.type };
    }
    case 5:
      return {
        body: prng.bytes(prng.size(prng.chance(0.02) ? 1_200_000 : 70_000)),
        type: prng.pick([
          'application/octet-stream',
          'image/png',
          'text/plain; charset=utf-16le',
          'text/plain; charset=nope',
        ]),
      };
    case 6: {
      // a content-type lie: JSON labelled as a form or the reverse, or nonsense types
      const text = prng.chance(0.5) ? JSON.stringify(wrongJson(prng)) : 'a=1&b=2';
      return {
        body: Buffer.from(text),
        type: prng.pick([
          'application/x-www-form-urlencoded',
          'application/json',
          'application/json; charset=latin1',
          'multipart/form-data; boundary=',
          'text/html',
          ';;;',
          'application/x-www-form-urlencoded; charset=utf-16',
        ]),
      };
    }
    case 7:
      return { body: Buffer.from('not json {'), type: 'application/json' };
    case 8:
      return { body: Buffer.from('x'.repeat(prng.size(300_000))), type: 'text/plain' };
    default:
      return { body: Buffer.alloc(0), type: prng.pick(['application/json', 'text/plain']) };
  }
}

function authMode(prng: Prng): AuthMode {
  const r = prng.next();
  if (r < 0.8) return 'token-header';
  if (r < 0.85) return 'cookie';
  if (r < 0.9) return 'query';
  if (r < 0.93) return 'none';
  if (r < 0.96) return 'garbage-token';
  if (r < 0.98) return 'kvmd-wrong';
  return 'kvmd-right';
}

function oddHeaders(prng: Prng, headers: Record<string, string>): void {
  if (prng.chance(0.03)) headers['origin'] = prng.pick(['http://evil.example', 'null', '']);
  if (prng.chance(0.02)) headers['sec-fetch-site'] = prng.pick(['cross-site', 'same-site', 'x']);
  if (prng.chance(0.02)) headers['x-forwarded-for'] = prng.pick(['1.2.3.4', 'garbage', '::1,,']);
  if (prng.chance(0.02)) headers['accept-encoding'] = prng.pick(['br', 'gzip;q=0', '*', '']);
  if (prng.chance(0.02)) headers['x-kvmd-user'] = 'admin'; // half a header pair
  if (prng.chance(0.01)) headers['x-big'] = 'b'.repeat(prng.int(1000, 20_000));
  if (prng.chance(0.01)) headers['range'] = prng.pick(['bytes=0-0', 'bytes=-1', 'bytes=9-1']);
  if (prng.chance(0.02)) headers['expect'] = '100-continue';
}

export class HttpGenerator {
  private readonly routes: RouteSpec[];

  constructor(
    private readonly prng: Prng,
    routes: readonly RouteSpec[],
    /** Long mode: `set_enabled` restarts the real server; give it a valid value rarely. */
    private readonly opts: { restartRarely?: boolean } = {},
  ) {
    // Sockets get their own frames; their plain-HTTP GET is fuzzed here too.
    this.routes = routes.filter((r) => r.url !== '/*');
  }

  next(): FuzzRequest {
    const prng = this.prng;
    const unknown = prng.chance(0.06);
    const route = unknown ? null : prng.pick(this.routes);
    let method = route?.method ?? prng.pick(ODD_METHODS);
    let path = route ? route.url : prng.pick(UNKNOWN_PATHS);
    if (route && prng.chance(0.04)) method = prng.pick(ODD_METHODS); // known path, odd method
    if (route && prng.chance(0.01)) path = path.toUpperCase();
    const names = (route && PARAMS[route.url]) || [];
    let query = queryString(prng, names, true);
    if (route?.url === '/api/msd/set_enabled' && this.opts.restartRarely && !prng.chance(0.05)) {
      query = `?enabled=${mutatedValue(prng)}`;
    }
    const headers: Record<string, string> = {};
    let payload: Buffer | null = null;
    if (method !== 'GET' && method !== 'HEAD' ? prng.chance(0.7) : prng.chance(0.1)) {
      const b = body(prng, names);
      payload = b.body;
      if (b.type !== null) headers['content-type'] = b.type;
    }
    if (payload === null && prng.chance(0.05)) headers['content-type'] = 'application/json';
    oddHeaders(prng, headers);
    const lengthLie =
      payload !== null && prng.chance(0.03)
        ? prng.pick([0, Math.max(0, payload.length - 1), payload.length + prng.int(1, 1000)])
        : null;
    return {
      method,
      url: `${path}${query}`,
      headers,
      body: payload,
      auth: authMode(prng),
      route: route ? `${route.method} ${route.url}` : 'unknown',
      lengthLie,
      mayBeSlow: route !== null && SLOW_ROUTES.has(route.url),
      endsSession: route?.url === '/api/auth/logout' && method === 'POST',
    };
  }
}

// ---------------------------------------------------------------- sockets

const JANUS_VERBS = [
  'create',
  'attach',
  'message',
  'trickle',
  'keepalive',
  'detach',
  'destroy',
  'hangup',
  'claim',
  'info',
  'ping',
  'nope',
];

const WS_EVENT_TYPES = [
  'ping',
  'key',
  'mouse_button',
  'mouse_move',
  'mouse_relative',
  'mouse_wheel',
  'nope',
  '',
  '__proto__',
  'constructor',
];

/** Known live ids a socket has seen, so some requests name real sessions and handles. */
export interface JanusIds {
  sessions: number[];
  handles: Array<{ session: number; handle: number }>;
}

function wrongId(prng: Prng): unknown {
  return prng.pick([
    0,
    -1,
    1.5,
    2 ** 53,
    Number.MAX_SAFE_INTEGER,
    '1',
    null,
    [],
    {},
    true,
    prng.int(1, 2 ** 48),
    undefined,
  ]);
}

function mutatedField(prng: Prng): unknown {
  return prng.chance(0.5) ? wrongJson(prng) : decodeSafe(mutatedValue(prng));
}

function hidEventPayload(prng: Prng, type: string): Record<string, unknown> {
  const pick = <T>(good: T): unknown => (prng.chance(0.5) ? good : mutatedField(prng));
  switch (type) {
    case 'key':
      return {
        key: pick(prng.pick(['KeyA', 'ShiftLeft', 'Nope'])),
        state: pick(true),
        finish: pick(false),
      };
    case 'mouse_button':
      return { button: pick(prng.pick(['left', 'up', 'x'])), state: pick(prng.chance(0.5)) };
    case 'mouse_move':
      return { to: prng.chance(0.7) ? { x: pick(100), y: pick(-100) } : mutatedField(prng) };
    case 'mouse_relative':
    case 'mouse_wheel':
      return {
        delta: prng.chance(0.6)
          ? Array.from({ length: prng.size(prng.chance(0.05) ? 5_000 : 20) }, () => ({
              x: pick(prng.int(-300, 300)),
              y: pick(prng.int(-300, 300)),
            }))
          : mutatedField(prng),
        squash: pick(true),
      };
    default:
      return { a: mutatedField(prng) };
  }
}

function hidBinary(prng: Prng): Buffer {
  const op = prng.int(1, 7);
  let len: number;
  switch (op) {
    case 1:
      len = prng.pick([1, 2, 3, 4, prng.int(5, 40)]);
      break;
    case 3:
      len = prng.pick([1, 3, 4, 5, 6, 9]);
      break;
    case 4:
    case 5:
      len = prng.pick([1, 2, 3, 4, 5, prng.size(prng.chance(0.05) ? 200_000 : 300)]);
      break;
    default:
      len = prng.pick([1, 2, 3, prng.int(4, 20)]);
  }
  const frame = prng.bytes(Math.max(1, len));
  frame[0] = op;
  if (op === 1 && len > 2 && prng.chance(0.5)) {
    const name = Buffer.from(prng.pick(['KeyA', 'ShiftLeft', 'Enter', 'Nope', '\u0000']));
    return Buffer.concat([frame.subarray(0, 2), name]);
  }
  if (op === 2 && len > 2 && prng.chance(0.5)) {
    return Buffer.concat([frame.subarray(0, 2), Buffer.from(prng.pick(['left', 'up', 'x']))]);
  }
  return frame;
}

export class FrameGenerator {
  constructor(private readonly prng: Prng) {}

  next(ids: JanusIds): FuzzFrame {
    // Frames over a socket's message limit get the socket closed (1009) and cost a reconnect:
    // keep them to a few percent so the run spends its frames inside the handlers.
    for (let i = 0; ; i += 1) {
      const frame = this.draw(ids);
      if (frame.data.length <= 12_000 || i >= 4 || this.prng.chance(0.05)) return frame;
    }
  }

  private draw(ids: JanusIds): FuzzFrame {
    const prng = this.prng;
    const socket = prng.pick<SocketKind>(['ws', 'ws', 'media', 'janus', 'janus']);
    if (prng.chance(0.002)) {
      // over every socket's message limit (the server closes with 1009)
      return {
        socket,
        data: Buffer.alloc(prng.pick([70_000, 1024 * 1024 + 16]), 0x41),
        binary: prng.chance(0.5),
      };
    }
    if (prng.chance(0.2)) return { socket, data: this.binary(socket), binary: true };
    if (prng.chance(0.1)) return { socket, data: this.brokenText(), binary: false };
    const value =
      socket === 'ws' ? this.wsJson() : socket === 'media' ? this.mediaJson() : this.janusJson(ids);
    let text: string;
    try {
      text = JSON.stringify(value) ?? 'null';
    } catch {
      text = 'null';
    }
    // a JSON frame sent as binary, as some clients do
    return prng.chance(0.03)
      ? { socket, data: Buffer.from(text), binary: true }
      : { socket, data: text, binary: false };
  }

  private binary(socket: SocketKind): Buffer {
    const prng = this.prng;
    if (socket === 'ws' && prng.chance(0.7)) return hidBinary(prng);
    if (prng.chance(0.3)) return Buffer.from([prng.pick([0x00, 0x01, 0xff, 0x02])]);
    return prng.bytes(prng.size(prng.chance(0.02) ? 300_000 : 64));
  }

  private brokenText(): string {
    return this.prng.pick([
      '',
      'null',
      'not json',
      '{',
      '{"event_type":',
      '[1,2',
      '\u0000',
      '"\\ud800"',
      '{"a":1}{"b":2}',
      `${'['.repeat(50_000)}`,
      `${'['.repeat(10_000)}${']'.repeat(10_000)}`,
      '1e999',
      '-',
    ]);
  }

  private wsJson(): unknown {
    const prng = this.prng;
    if (prng.chance(0.15)) return wrongJson(prng);
    const type = prng.chance(0.9) ? prng.pick(WS_EVENT_TYPES) : mutatedField(prng);
    const event =
      typeof type === 'string' && prng.chance(0.7)
        ? hidEventPayload(prng, type)
        : mutatedField(prng);
    const frame: Record<string, unknown> = { event_type: type, event };
    if (prng.chance(0.1)) delete frame['event'];
    if (prng.chance(0.05)) frame['extra'] = mutatedField(prng);
    return frame;
  }

  private mediaJson(): unknown {
    const prng = this.prng;
    if (prng.chance(0.3)) return wrongJson(prng);
    const good = { type: 'video', format: 'h264' };
    // `start` subscribes to the video feed: keep it rare, every frame after it is real video.
    const type = prng.chance(0.05) ? 'start' : prng.pick(['stop', 'ping', 'nope', null, 1]);
    const event = prng.chance(0.5)
      ? { ...good, [prng.pick(['type', 'format', 'x'])]: mutatedField(prng) }
      : mutatedField(prng);
    return { event_type: prng.chance(0.8) ? type : mutatedField(prng), event };
  }

  private janusJson(ids: JanusIds): unknown {
    const prng = this.prng;
    if (prng.chance(0.1)) return wrongJson(prng);
    const verb = prng.chance(0.9) ? prng.pick(JANUS_VERBS) : mutatedField(prng);
    const req: Record<string, unknown> = {
      janus: verb,
      transaction: prng.chance(0.9) ? `t${prng.int(0, 1e9)}` : mutatedField(prng),
    };
    const known = ids.handles.length > 0 && prng.chance(0.7) ? prng.pick(ids.handles) : null;
    const session =
      known?.session ??
      (ids.sessions.length > 0 && prng.chance(0.6) ? prng.pick(ids.sessions) : wrongId(prng));
    if (verb !== 'create' || prng.chance(0.2)) req['session_id'] = session;
    if (verb === 'create' && prng.chance(0.2)) req['id'] = wrongId(prng);
    if (
      (typeof verb === 'string' && ['message', 'trickle', 'detach', 'hangup'].includes(verb)) ||
      prng.chance(0.1)
    ) {
      req['handle_id'] = known && prng.chance(0.8) ? known.handle : wrongId(prng);
    }
    if (verb === 'attach') {
      req['plugin'] = prng.chance(0.7) ? 'janus.plugin.ustreamer' : mutatedField(prng);
      if (prng.chance(0.3)) req['opaque_id'] = mutatedField(prng);
    }
    if (verb === 'message') {
      // `watch` builds a real WebRTC offer: keep it rare so the run stays fast.
      const request = prng.chance(0.03)
        ? 'watch'
        : prng.pick(['features', 'start', 'stop', 'key_required', 'nope', 1, null, undefined]);
      req['body'] = prng.chance(0.8)
        ? { request, ...(prng.chance(0.3) ? { params: mutatedField(prng) } : {}) }
        : mutatedField(prng);
      if (prng.chance(0.3)) {
        req['jsep'] = prng.chance(0.6)
          ? {
              type: prng.pick(['answer', 'offer', 'pranswer', 1]),
              sdp: prng.pick([
                'v=0',
                'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n',
                'garbage',
                decodeSafe(mutatedValue(prng)),
              ]),
            }
          : mutatedField(prng);
      }
    }
    if (verb === 'trickle') {
      if (prng.chance(0.5))
        req['candidate'] = prng.chance(0.5)
          ? { candidate: 'candidate:1 1 udp 1 127.0.0.1 9 typ host', sdpMid: '0' }
          : mutatedField(prng);
      else
        req['candidates'] = prng.chance(0.5)
          ? [mutatedField(prng), { completed: true }, { candidate: mutatedField(prng) }]
          : mutatedField(prng);
    }
    if (prng.chance(0.05)) req[prng.pick(['body', 'jsep', 'plugin', 'x'])] = mutatedField(prng);
    return req;
  }
}
