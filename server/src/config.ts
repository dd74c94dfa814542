/**
 * Device configuration: YAML file -> defaults -> zod -> frozen object. A bad value stops the
 * start with its key path (`server.listen: ...`). Unknown keys are errors too, so a typo never
 * silently falls back to a default.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import * as z from '@kvm/protocol/zod';
import {
  CLOUD_TIMEOUT_MS,
  DEFAULT_KEYMAP,
  DEFAULT_STUN_URL,
  DEVICE_MODELS,
  KEYMAPS,
  SESSION_EXPIRE_DEFAULT_S,
} from '@kvm/protocol';
import { DEFAULT_FRAME_ANCESTORS, frameAncestorsIssue } from './http/frame-ancestors';
import { MAX_NAT_1TO1_IPS, natAddressIssue, parsePortRange } from './janus/peer-params';
import {
  DRIVER_CHOICES,
  TARGETS,
  type DriverChoice,
  type Subsystem,
  type TargetName,
} from './drivers/choices';

export { TARGETS, type TargetName } from './drivers/choices';

/**
 * A subsystem's driver (kvmd's `type`; drivers/choices.ts): `target` (the default) is the target
 * preset's choice, `disabled` the one that reports itself offline and ignores its verbs.
 */
function driverType<S extends Subsystem>(
  subsystem: S,
): z.ZodMiniDefault<z.ZodMiniType<'target' | DriverChoice<S>>> {
  const choices = ['target', ...(DRIVER_CHOICES[subsystem] as readonly string[])] as [
    string,
    ...string[],
  ];
  return z._default(z.enum(choices), 'target') as unknown as z.ZodMiniDefault<
    z.ZodMiniType<'target' | DriverChoice<S>>
  >;
}

/** An integer from `min` to `max` (no upper bound when null), `fallback` when missing. */
function int(min: number, max: number | null, fallback: number) {
  const bounds = max === null ? [z.gte(min)] : [z.gte(min), z.lte(max)];
  return z._default(z.number().check(z.int(), ...bounds), fallback);
}

/** A positive number up to `max`, `fallback` when missing. */
function positive(max: number, fallback: number) {
  return z._default(z.number().check(z.positive(), z.lte(max)), fallback);
}

/** A string of at least `min` (and at most `max`) characters, `fallback` when missing. */
function text(fallback: string, min = 1, max?: number) {
  const lengths = max === undefined ? [z.minLength(min)] : [z.minLength(min), z.maxLength(max)];
  return z._default(z.string().check(...lengths), fallback);
}

/** A string that `pattern` matches, `fallback` when missing. */
function matching(pattern: RegExp, fallback: string, message?: string) {
  return z._default(z.string().check(z.regex(pattern, message)), fallback);
}

/** An `http(s)://` URL of at most 2000 characters, or null (the default). */
function httpUrl(pattern = /^https?:\/\//, message?: string) {
  return z._default(
    z.nullable(z.string().check(z.regex(pattern, message), z.maxLength(2000))),
    null,
  );
}

const flag = (fallback: boolean) => z._default(z.boolean(), fallback);

/** A block of keys: every key has a default, so a missing block is `{}` filled in. */
function block<S extends z.core.$ZodLooseShape>(shape: S) {
  const schema = z.strictObject(shape);
  // {} is a valid input of every block here (each key has a default): TypeScript cannot see it
  return z.prefault(schema, {} as z.input<typeof schema>);
}

/** One GPIO line of `atx.gpio`: an offset on the chip or the line's name, and its polarity. */
function gpioLine(offset: number) {
  return z.strictObject({
    line: z._default(
      z.union([
        z.number().check(z.int(), z.gte(0), z.lte(1023)),
        z.string().check(z.regex(/^[\w.+-]{1,63}$/, 'a line name: letters, digits, _ . + -')),
      ]),
      offset,
    ),
    active_low: flag(false),
  });
}

export interface HostPort {
  host: string;
  port: number;
}

/** `host:port`, `[v6]:port` or `:port` (all interfaces). */
export function parseHostPort(text: string): HostPort | null {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  if (!m) return null;
  const port = Number(m[3]);
  if (port < 0 || port > 65535) return null;
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

const hostPort = z.pipe(
  z.string(),
  z.transform((text: string, ctx) => {
    const hp = parseHostPort(text);
    if (!hp) {
      ctx.issues.push({
        code: 'custom',
        message: `expected host:port, got ${JSON.stringify(text)}`,
        input: text,
      });
      return z.NEVER;
    }
    return hp;
  }),
);

const configSchema = z.strictObject({
  /** Which remote computer the drivers talk to (architecture.md, Targets). */
  target: z._default(z.enum(TARGETS as [TargetName, ...TargetName[]]), 'qemu'),
  /** The one data folder: state, certificate, logs. */
  data_dir: z.optional(z.string().check(z.minLength(1))),
  server: block({
    listen: z.prefault(hostPort, '0.0.0.0:8443'),
    tls: flag(true),
    /** Plain-HTTP listener that redirects to HTTPS; null turns it off. */
    redirect_listen: z.prefault(z.nullable(hostPort), '0.0.0.0:8080'),
    /** Largest JSON or form body, bytes. */
    body_limit: int(1024, 64 * 1024 * 1024, 1024 * 1024),
    /** Honour X-Real-IP / X-Forwarded-For for the client address (behind a proxy only). */
    trust_proxy: flag(false),
    /** Built console to serve; defaults to web/dist of this checkout. */
    web_dir: z.optional(z.string()),
    /** The request line and headers must arrive within this (slowloris; also TLS handshake). */
    headers_timeout_s: positive(300, 15),
    /** A connection with no byte in either direction for this long is closed (bodies too). */
    idle_timeout_s: positive(3600, 120),
    /** An idle keep-alive connection is closed after this. */
    keep_alive_timeout_s: positive(600, 10),
    /** Open connections one client address may hold; more are closed at once. */
    max_connections_per_address: int(1, 65536, 128),
    /** Extra names of the device the HTTP redirect may send browsers to (DNS names, IPs). */
    names: z._default(z.array(z.string().check(z.minLength(1), z.maxLength(253))), []),
    /**
     * Pages allowed to show the console in a frame (CSP frame-ancestors): `'self'`, `'none'`
     * or origins like `https://app.example`. Default: the device's own origin only.
     */
    frame_ancestors: z._default(
      z.array(z.string().check(z.minLength(1), z.maxLength(300))).check(
        z.minLength(1),
        z.maxLength(32),
        z.superRefine((list: string[], ctx) => {
          const issue = frameAncestorsIssue(list);
          if (issue) ctx.addIssue({ code: 'custom', message: issue });
        }),
      ),
      [...DEFAULT_FRAME_ANCESTORS],
    ),
  }),
  auth: block({
    session_expire_s: int(60, null, SESSION_EXPIRE_DEFAULT_S),
    rate_limit: block({
      max_failures: int(1, null, 10),
      window_s: int(1, null, 600),
      lock_s: int(1, null, 600),
    }),
    trusted_device_days: int(1, 365, 30),
    /** What logout ends: `token` the presented session (GL), `user` all of its user's (PiKVM). */
    logout_scope: z._default(z.enum(['token', 'user']), 'token'),
  }),
  log: block({
    level: z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']), 'info'),
    file_max_bytes: int(64 * 1024, null, 5 * 1024 * 1024),
    files: int(1, 50, 5),
  }),
  testbed: block({
    width: z._default(z.number().check(z.int(), z.gte(64), z.lte(3840), z.multipleOf(16)), 1280),
    height: z._default(z.number().check(z.int(), z.gte(64), z.lte(2160), z.multipleOf(16)), 720),
  }),
  webrtc: block({
    /** SPEC 7: a public STUN server by default; null = no ICE servers (offline, tests). */
    stun_url: z._default(z.nullable(z.string().check(z.regex(/^stuns?:/))), DEFAULT_STUN_URL),
    /** TURN credentials file in GL's format {username, password, ttl, uris}; null = none. */
    turn_file: z._default(z.nullable(z.string()), null),
    /**
     * Janus `api_secret` of `/janus/ws`: every request but info/ping must carry it as
     * `apisecret` (error 403 otherwise); null = not asked (docs/api.md).
     */
    janus_api_secret: z._default(
      z.nullable(z.string().check(z.minLength(1), z.maxLength(256))),
      null,
    ),
    /** Janus `token_auth`: every request must carry the socket's session token as `token`. */
    janus_token_auth: flag(false),
    /**
     * UDP ports of the server's ICE candidates, "min-max" (at least two ports; each viewer
     * holds one per local address); null = any port (docs/webrtc.md "Behind a 1:1 NAT").
     */
    port_range: z._default(
      z.nullable(z.string()).check(
        z.superRefine((text: string | null, ctx) => {
          const range = text === null ? null : parsePortRange(text);
          if (typeof range === 'string') ctx.addIssue({ code: 'custom', message: range });
        }),
      ),
      null,
    ),
    /**
     * Addresses announced instead of the host candidates' own (same port), one per family
     * at least: the public side of a 1:1 NAT or a port-mapped container; [] = off.
     */
    nat_1to1_ips: z._default(
      z
        .array(
          z.string().check(
            z.superRefine((ip: string, ctx) => {
              const issue = natAddressIssue(ip);
              if (issue) ctx.addIssue({ code: 'custom', message: issue });
            }),
          ),
        )
        .check(z.maxLength(MAX_NAT_1TO1_IPS)),
      [],
    ),
  }),
  video: block({
    type: driverType('video'),
    ffmpeg: z._default(z.string(), 'ffmpeg'),
    /**
     * Keep one started ffmpeg waiting for the next viewer once the encoder stopped (media/
     * video-hub.ts SPARE): the first frame after a quiet spell does not wait for ffmpeg's
     * start (110 ms quiet, up to 1.2 s loaded), for ~9 MB of its own memory while it waits.
     */
    spare_encoder: flag(true),
    /**
     * An encoder that gives no frame for this long is killed and started again (media/
     * encoder.ts). 5 s is far above a frame's encoding time on a board; an emulated board (the
     * device VM under TCG, 2-7 frames a second at 640x480 on a loaded machine) needs more.
     */
    encoder_stall_ms: int(1000, 120_000, 5000),
    /** `type: file`: the video file played in a loop as the screen (docs/drivers.md). */
    file: z._default(z.nullable(z.string().check(z.minLength(1))), null),
    /** `type: v4l2`: the capture device (docs/drivers.md "V4L2 capture"). */
    v4l2: block({
      /** The capture device node. */
      device: matching(/^\//, '/dev/video0', 'an absolute path'),
      /** The input whose source changes are watched (the receiver's, usually 0). */
      input: int(0, 63, 0),
      /** The v4l2-ctl executable (Debian's v4l-utils). */
      ctl: text('v4l2-ctl'),
      /** ffmpeg `-input_format` names, most wanted first. */
      formats: z._default(
        z
          .array(z.string().check(z.regex(/^[a-z0-9_]{1,32}$/)))
          .check(z.minLength(1), z.maxLength(16)),
        ['yuyv422', 'uyvy422', 'nv12', 'yuv420p', 'nv16', 'rgb24', 'bgr24', 'mjpeg'],
      ),
      /** The most frames a second asked of a USB dongle (a receiver runs at its source's). */
      fps: int(1, 120, 60),
      /** The largest picture given to the encoder; larger timings are `unsupported_mode`. */
      max_width: int(16, 8192, 4096),
      max_height: int(16, 8192, 4096),
    }),
  }),
  wol: block({
    /**
     * Where magic packets go: 255.255.255.255 = the broadcast of the network they leave on;
     * loopback tests aim at 127.0.0.1 (with `network: host`).
     */
    address: z._default(z.ipv4(), '255.255.255.255'),
    port: int(1, 65535, 9),
    /**
     * Which network they leave on: `device` = the device's, as its network driver has it
     * (the developer targets' namespace; NetworkManager's = this computer's); `host` = this
     * computer's network, whatever the driver (docs/drivers.md "Wake-on-LAN").
     */
    network: z._default(z.enum(['device', 'host']), 'device'),
    /** With the host's network: send from this interface (to its subnet's broadcast). */
    interface: z._default(z.nullable(z.string().check(z.minLength(1))), null),
  }),
  hid: block({
    type: driverType('hid'),
    /** Folders of QEMU-format keymaps; the first that has a name wins. Default: see README. */
    keymaps_dirs: z.optional(z.array(z.string()).check(z.minLength(1))),
    /** Keymap of /api/hid/print when the call names none. */
    keymap: z._default(z.enum(KEYMAPS), DEFAULT_KEYMAP),
    /** Seconds without input before the jiggler moves the mouse. */
    jiggler_interval_s: int(5, 3600, 60),
  }),
  atx: block({
    type: driverType('atx'),
    /**
     * `type: gpio` (docs/drivers.md "ATX over GPIO"): the chip (name `gpiochip0`, number,
     * `/dev/` path or label) and each line by offset or by name, with its polarity. The
     * defaults are PiKVM's pins on a Raspberry Pi's gpiochip0; `null` = no such line.
     */
    gpio: block({
      chip: matching(/^[\w./:-]{1,128}$/, 'gpiochip0'),
      power_button: z.prefault(gpioLine(23), {}),
      reset_button: z.prefault(gpioLine(27), {}),
      power_led: z.prefault(z.nullable(gpioLine(24)), {}),
      hdd_led: z.prefault(z.nullable(gpioLine(22)), {}),
      /** gpioset, gpioget, gpiomon, gpioinfo: libgpiod 1.6's tools (Debian `gpiod`). */
      tools_dir: text('/usr/bin'),
    }),
  }),
  fingerbot: block({ type: driverType('fingerbot') }),
  audio: block({
    type: driverType('audio'),
    /** `type: alsa` (docs/drivers.md "Audio (ALSA)"): the board's sound card. */
    alsa: block({
      /**
       * The card's id as /proc/asound/cards has it; the default is the card the kernel makes
       * for the gadget's UAC2 function.
       */
      card: matching(/^[A-Za-z0-9_-]{1,32}$/, 'UAC2Gadget'),
      /** The PCM device on the card (capture and playback). */
      device: int(0, 31, 0),
      /** procfs's ALSA folder (`<proc>/<card>` exists while the card does). */
      proc: text('/proc/asound'),
    }),
  }),
  msd: block({
    type: driverType('msd'),
    /** Where write_remote may download from (docs/msd.md, "Where downloads may come from"). */
    remote: block({
      /** Private LAN ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) too. */
      allow_lan: flag(false),
      /** `host` or `host:port` (as in the URL) fetched whatever they resolve to. */
      allow_hosts: z._default(
        z.array(z.string().check(z.minLength(1), z.maxLength(300))).check(z.maxLength(100)),
        [],
      ),
    }),
  }),
  /**
   * The gadget target's USB side (docs/drivers.md "The gadget target"): every configfs, /sys and
   * /dev path the gadget drivers touch, so tests run them on fixture trees.
   */
  gadget: block({
    /** configfs's mount point (`usb_gadget/` below it). */
    configfs: text('/sys/kernel/config'),
    /** sysfs: `class/udc`, `dev/char`, `module`. */
    sys: text('/sys'),
    /** Where the kernel makes `/dev/hidgN`. */
    dev: text('/dev'),
    /** The gadget's folder: `<configfs>/usb_gadget/<name>`. */
    name: matching(/^[A-Za-z0-9_.-]{1,64}$/, 'kvm'),
    /** The UDC to bind; '' = the first under `<sys>/class/udc`. */
    udc: matching(/^[A-Za-z0-9_.:-]{0,128}$/, ''),
    /** How often the UDC's `state` is read. */
    udc_poll_ms: int(20, 10_000, 250),
    /** A write to `/dev/hidgN` that the host does not take in this time counts as offline. */
    hid_write_timeout_ms: int(10, 60_000, 500),
    /**
     * The USB sound card (UAC2, 48 kHz stereo 16-bit both ways) in the gadget, made when
     * `audio.type` is `alsa`; false: no sound function (the remote computer sees no card).
     */
    uac2: flag(true),
    /**
     * The USB webcam (UVC, YUYV 640x480 at 30/15 fps) the browser's camera feeds (issue 24);
     * false: no webcam function. A UDC that refuses it (no isochronous endpoints) gets the
     * gadget without it, said in problems and in the camera state.
     */
    uvc: flag(true),
    /** Our UVC frame server (server/native/uvc-stream; scripts/build.mjs puts it here). */
    uvc_stream: text('server/dist/uvc-stream'),
    /** GL's partition mode: the board's block device lent as the drive (SPEC: mmcblk0p10). */
    msd_partition_device: text('/dev/block/by-name/media'),
  }),
  system: block({
    /**
     * Who manages the device's network: `target` (the target's choice: `netns` on qemu and
     * testbed), `netns` (a namespace the server owns, docs/system.md), `nmcli`
     * (NetworkManager on a real device), `disabled`.
     */
    network: driverType('network'),
    /** The Wi-Fi client: `nmcli`, `test-radio` (simulated, says so), `disabled` (no adapter). */
    wifi: driverType('wifi'),
    /** The device clock: `offset` (kept in the data folder), `system` (timedatectl), `disabled`. */
    clock: driverType('clock'),
    /** Seconds a risky network change waits for the console's confirmation (issue 11). */
    confirm_timeout_s: int(5, 600, 60),
    /**
     * The root folder `/etc/localtime` and `/etc/hostname` live under when systemd does not
     * run; null: `/` with nmcli, `<data_dir>/system-root` on the developer targets.
     */
    root: z._default(z.nullable(z.string().check(z.minLength(1))), null),
  }),
  device: block({
    model: z._default(z.enum(DEVICE_MODELS), 'RM1'),
    /**
     * Serve kvmd 4.2xx's PiKVM Switch API (`/api/switch*`, an empty chain whose colors and
     * EDIDs are kept) for PiKVM clients. GL has it only on a model with a Switch (RM4PE,
     * none of these), so off by default: the routes are then unknown (404), as on GL.
     */
    pikvm_switch: flag(false),
    country_code: matching(/^[A-Z]{2}$/, 'US'),
  }),
  /** Firmware upgrade (issue 12, docs/upgrade.md): channels and the keys packages are signed with. */
  upgrade: block({
    /** Release channel base URL (GL layout: list-sha256.txt, metadata_<version>); null = none. */
    channel_url: httpUrl(),
    beta_channel_url: httpUrl(),
    /** ed25519 public keys packages must be signed by: PEM text or a PEM file's path. */
    trusted_keys: z._default(
      z.array(z.string().check(z.minLength(1), z.maxLength(10_000))).check(z.maxLength(16)),
      [],
    ),
    /** `start?skip_verify=true` installs a package whose signature is not trusted (never its
     *  hashes: a torn package is refused always). For development devices only. */
    allow_skip_verify: flag(false),
  }),
  /** The device shell of `/webterm` (issue 12, docs/api.md "Terminal"). */
  terminal: block({
    /** The shell program; null: $SHELL, else /bin/bash. */
    shell: z._default(z.nullable(z.string().check(z.minLength(1), z.maxLength(4096))), null),
    /** Its arguments: a login shell by default (the admin's profile runs). */
    args: z._default(z.array(z.string().check(z.maxLength(4096))).check(z.maxLength(32)), ['-l']),
    /** A shell that prints nothing this long after it starts is ended with a message. */
    start_timeout_s: int(1, 3600, 30),
    /** The remote computer's serial line: `qemu` (the VM's chardev socket) or `disabled`. */
    serial: driverType('serial'),
  }),
  support: block({
    /** Where contact-support requests are POSTed (multipart); null keeps them as bundles. */
    url: httpUrl(),
  }),
  /** The cloud (docs/cloud.md "Device"): the fleet server this device may bind to. */
  cloud: block({
    /**
     * The panel's switch before the admin first sets it (kept in `<data>/cloud.json` after);
     * off by default: nothing leaves the device until the admin enables it.
     */
    enabled: flag(false),
    /** The fleet's address offered before the admin sets one (https://host[:port]); null = none. */
    url: httpUrl(/^https:\/\/[^/?#@\s]+\/?$/, 'https://host[:port]'),
    /** Each call to the fleet, and the agent's handshake, must finish within this (SPEC 7: 30 s). */
    timeout_ms: int(1000, 120_000, CLOUD_TIMEOUT_MS),
  }),
  /**
   * The apps center's private-network apps (docs/apps.md). Each app's own keys (its tools'
   * paths) are in its block; what they share is here.
   */
  apps: block({
    /**
     * The most resident memory one app's processes may hold (MiB); over it for three samples
     * in a row, the app is stopped and says why (docs/apps.md "Memory cap").
     */
    memory_limit_mb: int(16, 4096, 128),
    /** How long one command of an app's tool may run before it is killed (a hung tool). */
    command_timeout_ms: int(500, 120_000, 10_000),
    /** The Tailscale app (docs/apps.md "Tailscale"): its CLI and daemon, a name on PATH or a path. */
    tailscale: block({
      tailscale: text('tailscale', 1, 4096),
      tailscaled: text('tailscaled', 1, 4096),
    }),
    /** The NetBird app (docs/apps.md "NetBird"). */
    netbird: block({
      /** The `netbird` program (CLI and daemon): a name on PATH or a path. */
      tool: text('netbird'),
      /** How long a login may wait: a setup key's `netbird up`, or the user at an SSO page. */
      login_timeout_s: int(10, 1800, 300),
    }),
    /** The ZeroTier app (docs/apps.md "ZeroTier"). */
    zerotier: block({
      cli: text('zerotier-cli'),
      daemon: text('zerotier-one'),
      /** The daemon's port (UDP for the network, TCP on loopback for the CLI). */
      port: int(1, 65535, 9993),
    }),
    /** The WireGuard app's tools (docs/apps.md "The tunnel"): names on PATH or paths. */
    wireguard: block({
      wireguard_go: text('wireguard-go'),
      wg: text('wg'),
    }),
  }),
});

export type ConfigInput = z.input<typeof configSchema>;
type Parsed = z.output<typeof configSchema>;
export type AppConfig = Readonly<
  Parsed & {
    data_dir: string;
    server: Parsed['server'] & { web_dir: string };
    hid: Parsed['hid'] & { keymaps_dirs: string[] };
  }
>;

export class ConfigError extends Error {}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

export interface ConfigDefaults {
  dataDir: string;
  webDir: string;
  /** Debian's QEMU keymaps, then the ones built at setup (en-us-altgr-intl). */
  keymapsDirs: string[];
}

/** Validates a config object (already parsed from YAML). Errors name every bad key path. */
export function buildConfig(
  input: unknown,
  defaults: ConfigDefaults,
  source = 'config',
): AppConfig {
  const parsed = configSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const keys =
        issue.code === 'unrecognized_keys'
          ? issue.keys.map((k) => [...issue.path, k].join('.'))
          : [];
      const path = issue.path.join('.') || '(root)';
      return keys.length
        ? `${source}: unknown key ${keys.join(', ')}`
        : `${source}: ${path}: ${issue.message}`;
    });
    throw new ConfigError(lines.join('\n'));
  }
  const cfg = parsed.data;
  return deepFreeze({
    ...cfg,
    data_dir: resolve(cfg.data_dir ?? defaults.dataDir),
    server: { ...cfg.server, web_dir: resolve(cfg.server.web_dir ?? defaults.webDir) },
    hid: {
      ...cfg.hid,
      keymaps_dirs: (cfg.hid.keymaps_dirs ?? defaults.keymapsDirs).map((d) => resolve(d)),
    },
  });
}

/** Reads a YAML file into a plain object (empty file = {}). */
export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${path}: cannot read (${(err as Error).message})`);
  }
  let doc: unknown;
  try {
    // Loaded only when a config file is given: the parser costs memory a default start saves.
    const { parse: parseYaml } = await import('./yaml');
    doc = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${path}: not valid YAML (${(err as Error).message})`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ConfigError(`${path}: the top level must be a mapping`);
  }
  return doc as Record<string, unknown>;
}
