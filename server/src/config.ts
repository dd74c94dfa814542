/**
 * Device configuration: YAML file -> defaults -> zod -> frozen object. A bad value stops the
 * start with its key path (`server.listen: ...`). Unknown keys are errors too, so a typo never
 * silently falls back to a default.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { z } from 'zod';
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
): z.ZodDefault<z.ZodType<'target' | DriverChoice<S>>> {
  const choices = ['target', ...(DRIVER_CHOICES[subsystem] as readonly string[])] as [
    string,
    ...string[],
  ];
  return z.enum(choices).default('target') as unknown as z.ZodDefault<
    z.ZodType<'target' | DriverChoice<S>>
  >;
}

/** One GPIO line of `atx.gpio`: an offset on the chip or the line's name, and its polarity. */
function gpioLine(offset: number) {
  return z
    .strictObject({
      line: z
        .union([
          z.number().int().min(0).max(1023),
          z.string().regex(/^[\w.+-]{1,63}$/, 'a line name: letters, digits, _ . + -'),
        ])
        .default(offset),
      active_low: z.boolean().default(false),
    })
    .nullable();
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

const hostPort = z.string().transform((text, ctx) => {
  const hp = parseHostPort(text);
  if (!hp) {
    ctx.addIssue({ code: 'custom', message: `expected host:port, got ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  return hp;
});

const configSchema = z.strictObject({
  /** Which remote computer the drivers talk to (architecture.md, Targets). */
  target: z.enum(TARGETS as [TargetName, ...TargetName[]]).default('qemu'),
  /** The one data folder: state, certificate, logs. */
  data_dir: z.string().min(1).optional(),
  server: z
    .strictObject({
      listen: hostPort.prefault('0.0.0.0:8443'),
      tls: z.boolean().default(true),
      /** Plain-HTTP listener that redirects to HTTPS; null turns it off. */
      redirect_listen: hostPort.nullable().prefault('0.0.0.0:8080'),
      /** Largest JSON or form body, bytes. */
      body_limit: z
        .number()
        .int()
        .min(1024)
        .max(64 * 1024 * 1024)
        .default(1024 * 1024),
      /** Honour X-Real-IP / X-Forwarded-For for the client address (behind a proxy only). */
      trust_proxy: z.boolean().default(false),
      /** Built console to serve; defaults to web/dist of this checkout. */
      web_dir: z.string().optional(),
      /** The request line and headers must arrive within this (slowloris; also TLS handshake). */
      headers_timeout_s: z.number().positive().max(300).default(15),
      /** A connection with no byte in either direction for this long is closed (bodies too). */
      idle_timeout_s: z.number().positive().max(3600).default(120),
      /** An idle keep-alive connection is closed after this. */
      keep_alive_timeout_s: z.number().positive().max(600).default(10),
      /** Open connections one client address may hold; more are closed at once. */
      max_connections_per_address: z.number().int().min(1).max(65536).default(128),
      /** Extra names of the device the HTTP redirect may send browsers to (DNS names, IPs). */
      names: z.array(z.string().min(1).max(253)).default([]),
      /**
       * Pages allowed to show the console in a frame (CSP frame-ancestors): `'self'`, `'none'`
       * or origins like `https://app.example`. Default: the device's own origin only.
       */
      frame_ancestors: z
        .array(z.string().min(1).max(300))
        .min(1)
        .max(32)
        .superRefine((list, ctx) => {
          const issue = frameAncestorsIssue(list);
          if (issue) ctx.addIssue({ code: 'custom', message: issue });
        })
        .default([...DEFAULT_FRAME_ANCESTORS]),
    })
    .prefault({}),
  auth: z
    .strictObject({
      session_expire_s: z.number().int().min(60).default(SESSION_EXPIRE_DEFAULT_S),
      rate_limit: z
        .strictObject({
          max_failures: z.number().int().min(1).default(10),
          window_s: z.number().int().min(1).default(600),
          lock_s: z.number().int().min(1).default(600),
        })
        .prefault({}),
      trusted_device_days: z.number().int().min(1).max(365).default(30),
      /** What logout ends: `token` the presented session (GL), `user` all of its user's (PiKVM). */
      logout_scope: z.enum(['token', 'user']).default('token'),
    })
    .prefault({}),
  log: z
    .strictObject({
      level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
      file_max_bytes: z
        .number()
        .int()
        .min(64 * 1024)
        .default(5 * 1024 * 1024),
      files: z.number().int().min(1).max(50).default(5),
    })
    .prefault({}),
  testbed: z
    .strictObject({
      width: z.number().int().min(64).max(3840).multipleOf(16).default(1280),
      height: z.number().int().min(64).max(2160).multipleOf(16).default(720),
    })
    .prefault({}),
  webrtc: z
    .strictObject({
      /** SPEC 7: a public STUN server by default; null = no ICE servers (offline, tests). */
      stun_url: z
        .string()
        .regex(/^stuns?:/)
        .nullable()
        .default(DEFAULT_STUN_URL),
      /** TURN credentials file in GL's format {username, password, ttl, uris}; null = none. */
      turn_file: z.string().nullable().default(null),
      /**
       * Janus `api_secret` of `/janus/ws`: every request but info/ping must carry it as
       * `apisecret` (error 403 otherwise); null = not asked (docs/api.md).
       */
      janus_api_secret: z.string().min(1).max(256).nullable().default(null),
      /** Janus `token_auth`: every request must carry the socket's session token as `token`. */
      janus_token_auth: z.boolean().default(false),
      /**
       * UDP ports of the server's ICE candidates, "min-max" (at least two ports; each viewer
       * holds one per local address); null = any port (docs/webrtc.md "Behind a 1:1 NAT").
       */
      port_range: z
        .string()
        .nullable()
        .superRefine((text, ctx) => {
          const range = text === null ? null : parsePortRange(text);
          if (typeof range === 'string') ctx.addIssue({ code: 'custom', message: range });
        })
        .default(null),
      /**
       * Addresses announced instead of the host candidates' own (same port), one per family
       * at least: the public side of a 1:1 NAT or a port-mapped container; [] = off.
       */
      nat_1to1_ips: z
        .array(
          z.string().superRefine((ip, ctx) => {
            const issue = natAddressIssue(ip);
            if (issue) ctx.addIssue({ code: 'custom', message: issue });
          }),
        )
        .max(MAX_NAT_1TO1_IPS)
        .default([]),
    })
    .prefault({}),
  video: z
    .strictObject({
      type: driverType('video'),
      ffmpeg: z.string().default('ffmpeg'),
      /**
       * Keep one started ffmpeg waiting for the next viewer once the encoder stopped (media/
       * video-hub.ts SPARE): the first frame after a quiet spell does not wait for ffmpeg's
       * start (110 ms quiet, up to 1.2 s loaded), for ~9 MB of its own memory while it waits.
       */
      spare_encoder: z.boolean().default(true),
      /**
       * An encoder that gives no frame for this long is killed and started again (media/
       * encoder.ts). 5 s is far above a frame's encoding time on a board; an emulated board (the
       * device VM under TCG, 2-7 frames a second at 640x480 on a loaded machine) needs more.
       */
      encoder_stall_ms: z.number().int().min(1000).max(120_000).default(5000),
      /** `type: file`: the video file played in a loop as the screen (docs/drivers.md). */
      file: z.string().min(1).nullable().default(null),
      /** `type: v4l2`: the capture device (docs/drivers.md "V4L2 capture"). */
      v4l2: z
        .strictObject({
          /** The capture device node. */
          device: z.string().regex(/^\//, 'an absolute path').default('/dev/video0'),
          /** The input whose source changes are watched (the receiver's, usually 0). */
          input: z.number().int().min(0).max(63).default(0),
          /** The v4l2-ctl executable (Debian's v4l-utils). */
          ctl: z.string().min(1).default('v4l2-ctl'),
          /** ffmpeg `-input_format` names, most wanted first. */
          formats: z
            .array(z.string().regex(/^[a-z0-9_]{1,32}$/))
            .min(1)
            .max(16)
            .default(['yuyv422', 'uyvy422', 'nv12', 'yuv420p', 'nv16', 'rgb24', 'bgr24', 'mjpeg']),
          /** The most frames a second asked of a USB dongle (a receiver runs at its source's). */
          fps: z.number().int().min(1).max(120).default(60),
          /** The largest picture given to the encoder; larger timings are `unsupported_mode`. */
          max_width: z.number().int().min(16).max(8192).default(4096),
          max_height: z.number().int().min(16).max(8192).default(4096),
        })
        .prefault({}),
    })
    .prefault({}),
  wol: z
    .strictObject({
      /**
       * Where magic packets go: 255.255.255.255 = the broadcast of the network they leave on;
       * loopback tests aim at 127.0.0.1 (with `network: host`).
       */
      address: z.ipv4().default('255.255.255.255'),
      port: z.number().int().min(1).max(65535).default(9),
      /**
       * Which network they leave on: `device` = the device's, as its network driver has it
       * (the developer targets' namespace; NetworkManager's = this computer's); `host` = this
       * computer's network, whatever the driver (docs/drivers.md "Wake-on-LAN").
       */
      network: z.enum(['device', 'host']).default('device'),
      /** With the host's network: send from this interface (to its subnet's broadcast). */
      interface: z.string().min(1).nullable().default(null),
    })
    .prefault({}),
  hid: z
    .strictObject({
      type: driverType('hid'),
      /** Folders of QEMU-format keymaps; the first that has a name wins. Default: see README. */
      keymaps_dirs: z.array(z.string()).min(1).optional(),
      /** Keymap of /api/hid/print when the call names none. */
      keymap: z.enum(KEYMAPS).default(DEFAULT_KEYMAP),
      /** Seconds without input before the jiggler moves the mouse. */
      jiggler_interval_s: z.number().int().min(5).max(3600).default(60),
    })
    .prefault({}),
  atx: z
    .strictObject({
      type: driverType('atx'),
      /**
       * `type: gpio` (docs/drivers.md "ATX over GPIO"): the chip (name `gpiochip0`, number,
       * `/dev/` path or label) and each line by offset or by name, with its polarity. The
       * defaults are PiKVM's pins on a Raspberry Pi's gpiochip0; `null` = no such line.
       */
      gpio: z
        .strictObject({
          chip: z
            .string()
            .regex(/^[\w./:-]{1,128}$/)
            .default('gpiochip0'),
          power_button: gpioLine(23).unwrap().prefault({}),
          reset_button: gpioLine(27).unwrap().prefault({}),
          power_led: gpioLine(24).prefault({}),
          hdd_led: gpioLine(22).prefault({}),
          /** gpioset, gpioget, gpiomon, gpioinfo: libgpiod 1.6's tools (Debian `gpiod`). */
          tools_dir: z.string().min(1).default('/usr/bin'),
        })
        .prefault({}),
    })
    .prefault({}),
  fingerbot: z.strictObject({ type: driverType('fingerbot') }).prefault({}),
  audio: z
    .strictObject({
      type: driverType('audio'),
      /** `type: alsa` (docs/drivers.md "Audio (ALSA)"): the board's sound card. */
      alsa: z
        .strictObject({
          /**
           * The card's id as /proc/asound/cards has it; the default is the card the kernel makes
           * for the gadget's UAC2 function.
           */
          card: z
            .string()
            .regex(/^[A-Za-z0-9_-]{1,32}$/)
            .default('UAC2Gadget'),
          /** The PCM device on the card (capture and playback). */
          device: z.number().int().min(0).max(31).default(0),
          /** procfs's ALSA folder (`<proc>/<card>` exists while the card does). */
          proc: z.string().min(1).default('/proc/asound'),
        })
        .prefault({}),
    })
    .prefault({}),
  msd: z
    .strictObject({
      type: driverType('msd'),
      /** Where write_remote may download from (docs/msd.md, "Where downloads may come from"). */
      remote: z
        .strictObject({
          /** Private LAN ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) too. */
          allow_lan: z.boolean().default(false),
          /** `host` or `host:port` (as in the URL) fetched whatever they resolve to. */
          allow_hosts: z.array(z.string().min(1).max(300)).max(100).default([]),
        })
        .prefault({}),
    })
    .prefault({}),
  /**
   * The gadget target's USB side (docs/drivers.md "The gadget target"): every configfs, /sys and
   * /dev path the gadget drivers touch, so tests run them on fixture trees.
   */
  gadget: z
    .strictObject({
      /** configfs's mount point (`usb_gadget/` below it). */
      configfs: z.string().min(1).default('/sys/kernel/config'),
      /** sysfs: `class/udc`, `dev/char`, `module`. */
      sys: z.string().min(1).default('/sys'),
      /** Where the kernel makes `/dev/hidgN`. */
      dev: z.string().min(1).default('/dev'),
      /** The gadget's folder: `<configfs>/usb_gadget/<name>`. */
      name: z
        .string()
        .regex(/^[A-Za-z0-9_.-]{1,64}$/)
        .default('kvm'),
      /** The UDC to bind; '' = the first under `<sys>/class/udc`. */
      udc: z
        .string()
        .regex(/^[A-Za-z0-9_.:-]{0,128}$/)
        .default(''),
      /** How often the UDC's `state` is read. */
      udc_poll_ms: z.number().int().min(20).max(10_000).default(250),
      /** A write to `/dev/hidgN` that the host does not take in this time counts as offline. */
      hid_write_timeout_ms: z.number().int().min(10).max(60_000).default(500),
      /**
       * The USB sound card (UAC2, 48 kHz stereo 16-bit both ways) in the gadget, made when
       * `audio.type` is `alsa`; false: no sound function (the remote computer sees no card).
       */
      uac2: z.boolean().default(true),
      /**
       * The USB webcam (UVC, YUYV 640x480 at 30/15 fps) the browser's camera feeds (issue 24);
       * false: no webcam function. A UDC that refuses it (no isochronous endpoints) gets the
       * gadget without it, said in problems and in the camera state.
       */
      uvc: z.boolean().default(true),
      /** Our UVC frame server (server/native/uvc-stream; scripts/build.mjs puts it here). */
      uvc_stream: z.string().min(1).default('server/dist/uvc-stream'),
      /** GL's partition mode: the board's block device lent as the drive (SPEC: mmcblk0p10). */
      msd_partition_device: z.string().min(1).default('/dev/block/by-name/media'),
    })
    .prefault({}),
  system: z
    .strictObject({
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
      confirm_timeout_s: z.number().int().min(5).max(600).default(60),
      /**
       * The root folder `/etc/localtime` and `/etc/hostname` live under when systemd does not
       * run; null: `/` with nmcli, `<data_dir>/system-root` on the developer targets.
       */
      root: z.string().min(1).nullable().default(null),
    })
    .prefault({}),
  device: z
    .strictObject({
      model: z.enum(DEVICE_MODELS).default('RM1'),
      /**
       * Serve kvmd 4.2xx's PiKVM Switch API (`/api/switch*`, an empty chain whose colors and
       * EDIDs are kept) for PiKVM clients. GL has it only on a model with a Switch (RM4PE,
       * none of these), so off by default: the routes are then unknown (404), as on GL.
       */
      pikvm_switch: z.boolean().default(false),
      country_code: z
        .string()
        .regex(/^[A-Z]{2}$/)
        .default('US'),
    })
    .prefault({}),
  /** Firmware upgrade (issue 12, docs/upgrade.md): channels and the keys packages are signed with. */
  upgrade: z
    .strictObject({
      /** Release channel base URL (GL layout: list-sha256.txt, metadata_<version>); null = none. */
      channel_url: z
        .string()
        .regex(/^https?:\/\//)
        .max(2000)
        .nullable()
        .default(null),
      beta_channel_url: z
        .string()
        .regex(/^https?:\/\//)
        .max(2000)
        .nullable()
        .default(null),
      /** ed25519 public keys packages must be signed by: PEM text or a PEM file's path. */
      trusted_keys: z.array(z.string().min(1).max(10_000)).max(16).default([]),
      /** `start?skip_verify=true` installs a package whose signature is not trusted (never its
       *  hashes: a torn package is refused always). For development devices only. */
      allow_skip_verify: z.boolean().default(false),
    })
    .prefault({}),
  /** The device shell of `/webterm` (issue 12, docs/api.md "Terminal"). */
  terminal: z
    .strictObject({
      /** The shell program; null: $SHELL, else /bin/bash. */
      shell: z.string().min(1).max(4096).nullable().default(null),
      /** Its arguments: a login shell by default (the admin's profile runs). */
      args: z.array(z.string().max(4096)).max(32).default(['-l']),
      /** A shell that prints nothing this long after it starts is ended with a message. */
      start_timeout_s: z.number().int().min(1).max(3600).default(30),
      /** The remote computer's serial line: `qemu` (the VM's chardev socket) or `disabled`. */
      serial: driverType('serial'),
    })
    .prefault({}),
  support: z
    .strictObject({
      /** Where contact-support requests are POSTed (multipart); null keeps them as bundles. */
      url: z
        .string()
        .regex(/^https?:\/\//)
        .max(2000)
        .nullable()
        .default(null),
    })
    .prefault({}),
  /** The cloud (docs/cloud.md "Device"): the fleet server this device may bind to. */
  cloud: z
    .strictObject({
      /**
       * The panel's switch before the admin first sets it (kept in `<data>/cloud.json` after);
       * off by default: nothing leaves the device until the admin enables it.
       */
      enabled: z.boolean().default(false),
      /** The fleet's address offered before the admin sets one (https://host[:port]); null = none. */
      url: z
        .string()
        .regex(/^https:\/\/[^/?#@\s]+\/?$/, 'https://host[:port]')
        .max(2000)
        .nullable()
        .default(null),
      /** Each call to the fleet, and the agent's handshake, must finish within this (SPEC 7: 30 s). */
      timeout_ms: z.number().int().min(1000).max(120_000).default(CLOUD_TIMEOUT_MS),
    })
    .prefault({}),
  /**
   * The apps center's private-network apps (docs/apps.md). Each app's own keys (its tools'
   * paths) are in its block; what they share is here.
   */
  apps: z
    .strictObject({
      /**
       * The most resident memory one app's processes may hold (MiB); over it for three samples
       * in a row, the app is stopped and says why (docs/apps.md "Memory cap").
       */
      memory_limit_mb: z.number().int().min(16).max(4096).default(128),
      /** How long one command of an app's tool may run before it is killed (a hung tool). */
      command_timeout_ms: z.number().int().min(500).max(120_000).default(10_000),
      /** The Tailscale app (docs/apps.md "Tailscale"): its CLI and daemon, a name on PATH or a path. */
      tailscale: z
        .strictObject({
          tailscale: z.string().min(1).max(4096).default('tailscale'),
          tailscaled: z.string().min(1).max(4096).default('tailscaled'),
        })
        .prefault({}),
      /** The NetBird app (docs/apps.md "NetBird"). */
      netbird: z
        .strictObject({
          /** The `netbird` program (CLI and daemon): a name on PATH or a path. */
          tool: z.string().min(1).default('netbird'),
          /** How long a login may wait: a setup key's `netbird up`, or the user at an SSO page. */
          login_timeout_s: z.number().int().min(10).max(1800).default(300),
        })
        .prefault({}),
      /** The ZeroTier app (docs/apps.md "ZeroTier"). */
      zerotier: z
        .strictObject({
          cli: z.string().min(1).default('zerotier-cli'),
          daemon: z.string().min(1).default('zerotier-one'),
          /** The daemon's port (UDP for the network, TCP on loopback for the CLI). */
          port: z.number().int().min(1).max(65535).default(9993),
        })
        .prefault({}),
      /** The WireGuard app's tools (docs/apps.md "The tunnel"): names on PATH or paths. */
      wireguard: z
        .strictObject({
          wireguard_go: z.string().min(1).default('wireguard-go'),
          wg: z.string().min(1).default('wg'),
        })
        .prefault({}),
    })
    .prefault({}),
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
    const { parse: parseYaml } = await import('yaml');
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
