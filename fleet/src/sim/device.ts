/**
 * A simulated device (docs/cloud.md "The screen wall", "Simulated devices"): bound to a fleet
 * account by `bind/login` as a device's panel does, then the device's own agent
 * (server/src/services/cloud/agent.ts: the protocol's frames, heartbeat, full-jitter reconnect,
 * TLS trusting the fleet's certificate only) and its tunnel (tunnel.ts) into a tiny HTTP server
 * on loopback that answers what the fleet calls on a device (docs/cloud.md "What the fleet calls
 * on a device") with kvmd-like answers. Everything it shows says it is simulated: its name
 * starts with `sim-`, its screen says SIMULATED DEVICE, its /api/info model is `Simulated`.
 */
import { X509Certificate, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGunzip } from 'node:zlib';
import {
  WALL_MAX_HEIGHT,
  WALL_MAX_JPEG_BYTES,
  WALL_MAX_WIDTH,
  WALL_SNAPSHOT_QUALITY,
  type BindResult,
  type DeviceIdentity,
  type UpgradeOutcome,
} from '@kvm/protocol';
import { SILENT_LOGGER, type Logger } from '../../../server/src/log';
import {
  AgentCommandError,
  CloudAgent,
  type AgentLinkState,
} from '../../../server/src/services/cloud/agent';
import { CloudRateLimitError, FleetClient } from '../../../server/src/services/cloud/fleet-client';
import { CloudUnreachableError } from '../../../server/src/services/cloud/fleet-tls';
import type { FleetTrust } from '../../../server/src/services/cloud/fleet-tls';
import { snapshotBox } from '../../../server/src/services/cloud/snapshot';
import { Tunnel } from '../../../server/src/services/cloud/tunnel';
import { fitBox, renderSimScreen, simColor, type Rgb } from './picture';

export const SIM_MODEL = 'Simulated';
export const SIM_NAME_PREFIX = 'sim-';

export interface SimAccount {
  username: string;
  password: string;
  region?: string;
}

export interface SimDeviceOptions {
  /** The fleet: `https://host:port`. */
  fleetUrl: string;
  /** The fleet's certificate (PEM): the only one trusted (pinned, as a device's panel pins it). */
  ca: string;
  account: SimAccount;
  /** Numbers the device: its name `sim-<tag>-<index>`, colour, MAC. */
  index: number;
  /** A word in every name of this run (default: random), so runs do not bind each other's. */
  tag?: string;
  version?: string;
  /** The counter on its screen changes this often (ms; default 5000). */
  changeEveryMs?: number;
  /** How long `upgrade/start` and `reboot` keep the device away (ms; default 2000). */
  rebootMs?: number;
  /** Upgrades come back on the old version with a failed last_upgrade. */
  failUpgrade?: boolean;
  log?: Logger;
  /** The agent's timings (tests). */
  timing?: Partial<{ pingMs: number; deadMs: number; baseMs: number; maxMs: number }>;
}

/** What the simulated device was asked (tests and the bench read it). */
export interface SimCalls {
  snapshots: number;
  requests: string[];
  uploadedBytes: number;
  upgrades: number;
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': data.length });
  res.end(data);
};
const ok = (res: ServerResponse, result: unknown): void => json(res, 200, { ok: true, result });
const fail = (res: ServerResponse, status: number, error: string, msg: string): void =>
  json(res, status, { ok: false, result: { error, error_msg: msg } });

/**
 * A release package's version from its first bytes (docs/upgrade.md: a gzip'd ustar tar whose
 * first entry is `manifest.json`), or null. Reads at most 64 KiB inflated.
 */
export class ManifestSniffer {
  private readonly gunzip = createGunzip();
  private inflated = Buffer.alloc(0);
  private done = false;
  version: string | null = null;

  constructor() {
    this.gunzip.on('data', (c: Buffer) => {
      if (this.done) return;
      this.inflated = Buffer.concat([this.inflated, c]);
      this.look();
    });
    this.gunzip.on('error', () => {
      this.done = true;
    });
  }

  push(chunk: Buffer): void {
    if (!this.done) this.gunzip.write(chunk);
  }

  /** The version once the input is complete (inflating is asynchronous). */
  end(): Promise<string | null> {
    if (this.done) return Promise.resolve(this.version);
    return new Promise((resolve) => {
      const settle = () => resolve(this.version);
      this.gunzip.once('close', settle);
      this.gunzip.once('error', settle);
      this.gunzip.once('end', settle);
      this.gunzip.end();
    });
  }

  private look(): void {
    const b = this.inflated;
    if (b.length > 64 * 1024) return this.finish();
    if (b.length < 512) return;
    const name = b.subarray(0, 100).toString('latin1').replace(/\0.*$/s, '');
    const size = parseInt(b.subarray(124, 136).toString('latin1').replace(/\0.*$/s, '').trim(), 8);
    if (name !== 'manifest.json' || !Number.isFinite(size)) {
      this.finish();
      return;
    }
    if (b.length < 512 + size) return;
    try {
      const m = JSON.parse(b.subarray(512, 512 + size).toString('utf8')) as { version?: unknown };
      if (typeof m.version === 'string') this.version = m.version;
    } catch {
      // not a manifest
    }
    this.finish();
  }

  private finish(): void {
    this.done = true;
    this.inflated = Buffer.alloc(0);
    this.gunzip.destroy();
  }
}

/**
 * The body of a one-part multipart upload as it streams: the part's headers skipped, the
 * closing delimiter (`\r\n--<boundary>--\r\n`) held back and dropped. Resolves with the
 * request's byte count. Without a boundary every byte goes to `onData`.
 */
function multipartBody(req: IncomingMessage, onData: (c: Buffer) => void): Promise<number> {
  const boundary = /boundary="?([^";]+)"?/i.exec(String(req.headers['content-type'] ?? ''))?.[1];
  const hold = boundary ? boundary.length + 8 : 0;
  return new Promise((resolve, reject) => {
    let total = 0;
    let head: Buffer | null = boundary ? Buffer.alloc(0) : null;
    let tail = Buffer.alloc(0);
    const pass = (c: Buffer): void => {
      if (hold === 0) {
        onData(c);
        return;
      }
      tail = Buffer.concat([tail, c]);
      if (tail.length > hold) {
        onData(tail.subarray(0, tail.length - hold));
        tail = tail.subarray(tail.length - hold);
      }
    };
    req.on('data', (c: Buffer) => {
      total += c.length;
      if (head === null) {
        pass(c);
        return;
      }
      head = Buffer.concat([head, c]);
      const i = head.indexOf('\r\n\r\n');
      if (i >= 0) {
        const rest = head.subarray(i + 4);
        head = null;
        if (rest.length > 0) pass(rest);
      } else if (head.length > 16 * 1024) head = null;
    });
    req.on('end', () => resolve(total));
    req.on('error', reject);
  });
}

export class SimDevice {
  readonly name: string;
  readonly identity: DeviceIdentity;
  readonly color: Rgb;
  readonly calls: SimCalls = { snapshots: 0, requests: [], uploadedBytes: 0, upgrades: 0 };
  version: string;
  binding: BindResult | null = null;
  state: AgentLinkState = 'idle';
  /** Times the agent was welcomed (a reconnect counts again). */
  welcomes = 0;
  lastUpgrade: UpgradeOutcome | null = null;
  private agent: CloudAgent | null = null;
  private server: Server | null = null;
  private origin = '';
  private readonly trust: FleetTrust;
  private readonly tunnel: Tunnel;
  private readonly started = Date.now();
  private upload: { name: string; size: number; version: string | null } | null = null;
  private msd = {
    images: new Map<string, number>(),
    image: null as string | null,
    cdrom: true,
    connected: false,
  };
  private rebooting: NodeJS.Timeout | null = null;
  private lastScreen: { key: string; data: Buffer } | null = null;
  private stopped = false;
  private readonly log: Logger;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly opts: SimDeviceOptions) {
    const tag = opts.tag ?? randomBytes(2).toString('hex');
    this.name = `${SIM_NAME_PREFIX}${tag}-${String(opts.index).padStart(3, '0')}`;
    this.version = opts.version ?? '1.0.0';
    this.color = simColor(opts.index);
    const r = randomBytes(2);
    const i = opts.index & 0xffff;
    const mac = [0x02, 0x51, r[0]!, r[1]!, i >> 8, i & 0xff]
      .map((b) => b.toString(16).padStart(2, '0'))
      .join(':');
    this.identity = {
      mac,
      serial: `SIM-${tag}-${opts.index}`.toUpperCase(),
      name: this.name,
      model: SIM_MODEL,
      version: this.version,
    };
    this.log = opts.log ?? SILENT_LOGGER;
    this.trust = { pinned: new X509Certificate(opts.ca).fingerprint256, pinnedCert: opts.ca };
    this.tunnel = new Tunnel({
      local: () => (this.origin ? { origin: this.origin, cert: null } : null),
      // the tiny server has no sessions: any fleet user is let in
      sessions: { tokenFor: async () => 'simulated' },
      log: this.log,
    });
  }

  get id(): string | null {
    return this.binding?.device_id ?? null;
  }

  get online(): boolean {
    return this.state === 'online';
  }

  /** The counter on the screen now. */
  get counter(): number {
    return Math.floor((Date.now() - this.started) / (this.opts.changeEveryMs ?? 5000));
  }

  /** Called on every state change (tests wait on it). */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Binds (once), starts the tiny HTTP server and the agent. */
  async start(): Promise<void> {
    this.stopped = false;
    if (!this.binding) this.binding = await this.bind();
    if (!this.server) {
      const server = createServer((req, res) => {
        this.http(req, res).catch((err: unknown) => {
          this.log.warn({ err }, 'sim: request failed');
          if (!res.headersSent) fail(res, 500, 'failed', String(err));
          else res.destroy();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      this.server = server;
      this.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }
    this.startAgent();
  }

  /**
   * Drops the agent's socket for `ms` (a reboot), then connects again. The answer that asked
   * for it goes out first: the socket drops once the tunnel has no stream left (at most 2 s).
   */
  reboot(ms = this.opts.rebootMs ?? 2000, then?: () => void): void {
    if (this.rebooting) clearTimeout(this.rebooting);
    const until = Date.now() + 2000;
    const drop = (): void => {
      if (this.tunnel.size > 0 && Date.now() < until) {
        this.rebooting = setTimeout(drop, 20);
        return;
      }
      this.agent?.stop();
      this.agent = null;
      this.setState('idle');
      this.rebooting = setTimeout(() => {
        this.rebooting = null;
        if (this.stopped) return;
        then?.();
        this.startAgent();
      }, ms);
    };
    this.rebooting = setTimeout(drop, 20);
  }

  /** `bind/login`; a login the fleet is too busy for (429, 503) is tried again, 10 times. */
  private async bind(): Promise<BindResult> {
    const client = new FleetClient(this.opts.fleetUrl, this.trust);
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await client.post<BindResult>(
          'bind/login',
          {
            username: this.opts.account.username,
            password: this.opts.account.password,
            region: this.opts.account.region ?? 'eu',
            device: this.identity,
          },
          { timeoutMs: 15_000 },
        );
      } catch (err) {
        const busy =
          err instanceof CloudRateLimitError ||
          (err instanceof CloudUnreachableError && /HTTP 503/.test(err.message));
        if (!busy || attempt >= 10) throw err;
        await new Promise((r) => setTimeout(r, 250 * attempt + Math.random() * 250));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.rebooting) clearTimeout(this.rebooting);
    this.agent?.stop();
    this.agent = null;
    this.tunnel.closeAll();
    const server = this.server;
    this.server = null;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  private setState(state: AgentLinkState): void {
    this.state = state;
    for (const l of [...this.listeners]) l();
  }

  private startAgent(): void {
    if (!this.binding) return;
    const b = this.binding;
    const agent: CloudAgent = new CloudAgent({
      credentials: () => ({ deviceId: b.device_id, secret: b.secret, endpoints: b.endpoints }),
      trust: () => this.trust,
      identity: async () => ({ ...this.identity, version: this.version }),
      version: this.version,
      log: this.log,
      tunnel: this.tunnel,
      onRevoked: () => {
        this.binding = null;
        agent.stop();
      },
      onTurn: () => undefined,
      onState: (state) => {
        if (this.agent !== agent) return;
        if (state === 'online') this.welcomes += 1;
        this.setState(state);
      },
      onEndpoints: (endpoints) => {
        if (this.binding) this.binding = { ...this.binding, endpoints };
      },
      command: async (name, args) => this.command(name, args),
      ...(this.opts.timing ? { timing: this.opts.timing } : {}),
    });
    this.agent = agent;
    this.tunnel.attach({
      control: (frame) => agent.sendRaw(JSON.stringify(frame)),
      binary: (frame) => agent.sendRaw(frame),
    });
    agent.start();
  }

  /**
   * The screen as a JPEG inside the box (the `snapshot` command's picture); the last one is kept
   * and given again while the counter, box and quality stay (a hundred devices in one process).
   */
  screen(maxWidth = WALL_MAX_WIDTH, maxHeight = WALL_MAX_HEIGHT, quality = WALL_SNAPSHOT_QUALITY) {
    const size = fitBox(maxWidth, maxHeight);
    const counter = this.counter;
    const key = `${counter}:${size.width}x${size.height}:${quality}`;
    if (this.lastScreen?.key !== key) {
      const data = renderSimScreen({
        name: this.name,
        color: this.color,
        counter,
        quality,
        ...size,
      });
      this.lastScreen = { key, data };
    }
    return { ...size, data: this.lastScreen.data };
  }

  private async command(name: string, args: Record<string, unknown>): Promise<unknown> {
    switch (name) {
      case 'info':
        return {
          identity: { ...this.identity, version: this.version },
          version: this.version,
          model: SIM_MODEL,
          uptime_s: Math.round((Date.now() - this.started) / 1000),
          simulated: true,
        };
      case 'snapshot': {
        this.calls.snapshots += 1;
        const box = snapshotBox(args);
        const shot = this.screen(box.maxWidth, box.maxHeight, box.quality);
        if (shot.data.length > WALL_MAX_JPEG_BYTES) {
          throw new AgentCommandError('too_large', 'The snapshot is over the byte limit');
        }
        return {
          type: 'image/jpeg',
          width: shot.width,
          height: shot.height,
          online: true,
          quality: box.quality,
          jpeg: shot.data.toString('base64'),
        };
      }
      case 'unbind':
        return { unbound: true };
      default:
        throw new AgentCommandError('unknown_command', 'Unknown command');
    }
  }

  // ---- the tiny device server (reached through the tunnel) ----------------------------------

  private async http(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const q = url.searchParams;
    const route = `${req.method} ${url.pathname}`;
    this.calls.requests.push(`${route}${url.search}`);
    if (this.calls.requests.length > 1000) this.calls.requests.splice(0, 500);
    // a body the route does not read is drained
    const drain = () => new Promise<number>((r) => multipartBody(req, () => undefined).then(r));
    switch (route) {
      case 'GET /': {
        const html = Buffer.from(
          `<!doctype html><html><head><title>${this.name} (simulated)</title></head>` +
            `<body><h1>${this.name}</h1><p>This is a SIMULATED DEVICE: no computer is behind it.` +
            `</p><p>Version ${this.version}</p></body></html>`,
        );
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(html);
        return;
      }
      case 'GET /api/info':
        return ok(res, {
          meta: { server: { host: this.name }, simulated: true },
          system: {
            kvmd: { version: this.version },
            platform: {
              type: 'simulated',
              model: SIM_MODEL,
              base: 'none',
              serial: this.identity.serial,
            },
          },
        });
      case 'POST /api/atx/click': {
        await drain();
        const button = q.get('button');
        if (!['power', 'power_long', 'reset'].includes(button ?? '')) {
          return fail(res, 400, 'ValidatorError', "The argument 'button' is not valid");
        }
        return ok(res, {});
      }
      case 'GET /api/wol/devices':
        return ok(res, {
          devices: [{ name: `${this.name}-host`, mac: '02:57:4f:4c:00:01' }],
        });
      case 'POST /api/wol/wake':
        await drain();
        if (!/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/.test(q.get('mac') ?? '')) {
          return fail(res, 400, 'ValidatorError', "The argument 'mac' is not valid");
        }
        return ok(res, {});
      case 'GET /api/upgrade/reboot':
      case 'POST /api/upgrade/reboot':
        await drain();
        ok(res, { status: 'Reboot started' });
        res.on('finish', () => this.reboot());
        return;
      case 'POST /api/hid/events/send_shortcut':
        await drain();
        if (!q.get('keys')) return fail(res, 400, 'ValidatorError', "The argument 'keys' is empty");
        return ok(res, {});
      case 'GET /api/msd':
        return ok(res, this.msdState());
      case 'POST /api/msd/write': {
        const image = q.get('image') ?? '';
        if (!image) return fail(res, 400, 'ValidatorError', "The argument 'image' is empty");
        let size = 0;
        await new Promise<void>((resolve, reject) => {
          req.on('data', (c: Buffer) => {
            size += c.length;
          });
          req.on('end', resolve);
          req.on('error', reject);
        });
        this.calls.uploadedBytes += size;
        this.msd.images.set(image, size);
        return ok(res, { image: { name: image, size } });
      }
      case 'POST /api/msd/set_params': {
        await drain();
        const image = q.get('image');
        if (image !== null && !this.msd.images.has(image)) {
          return fail(res, 400, 'MsdUnknownImageError', 'The image is not found in the storage');
        }
        if (image !== null) this.msd.image = image;
        if (q.has('cdrom')) this.msd.cdrom = q.get('cdrom') === '1' || q.get('cdrom') === 'true';
        return ok(res, {});
      }
      case 'POST /api/msd/set_connected': {
        await drain();
        const on = q.get('connected') === '1' || q.get('connected') === 'true';
        if (on && !this.msd.image) {
          return fail(res, 400, 'MsdNoImageError', 'No image was selected');
        }
        this.msd.connected = on;
        return ok(res, {});
      }
      case 'POST /api/upgrade/upload': {
        const sniffer = new ManifestSniffer();
        const size = await multipartBody(req, (c) => sniffer.push(c));
        const sniffed = await sniffer.end();
        this.calls.uploadedBytes += size;
        const header = req.headers['x-sim-version'];
        const version = typeof header === 'string' && header ? header : sniffed;
        this.upload = { name: 'package.tar.gz', size, version };
        return ok(res, { filename: this.upload.name, size });
      }
      case 'POST /api/upgrade/start': {
        await drain();
        const up = this.upload;
        if (!up) return fail(res, 400, 'UpgradeError', 'No package was uploaded');
        if (!up.version) {
          return ok(res, {
            status: 'Upgrade failed',
            message: 'The package has no manifest with a version',
            stdout: '',
            stderr: '',
          });
        }
        this.upload = null;
        this.calls.upgrades += 1;
        const id = randomBytes(6).toString('hex');
        const from = this.version;
        ok(res, { status: 'Upgrade started', id, version: up.version, stdout: '', stderr: '' });
        res.on('finish', () =>
          this.reboot(undefined, () => {
            const failed = this.opts.failUpgrade === true;
            if (!failed) this.version = up.version!;
            this.lastUpgrade = {
              id,
              result: failed ? 'failed' : 'success',
              from_version: from,
              to_version: up.version!,
              reason: failed ? 'simulated rollback' : null,
              save_config: q.get('save_config') !== 'false',
              finished_at: new Date().toISOString(),
            };
          }),
        );
        return;
      }
      case 'GET /api/upgrade/status':
        return ok(res, {
          enabled: true,
          can_install: true,
          in_progress: this.rebooting !== null,
          version: this.version,
          last_upgrade: this.lastUpgrade,
        });
      default:
        await drain();
        return fail(res, 404, 'NotFoundError', `A simulated device has no ${route}`);
    }
  }

  private msdState(): Record<string, unknown> {
    const images: Record<string, { size: number; complete: boolean }> = {};
    let used = 0;
    for (const [name, size] of this.msd.images) {
      images[name] = { size, complete: true };
      used += size;
    }
    const total = 64 * 1024 * 1024 * 1024;
    return {
      enabled: true,
      online: true,
      busy: false,
      drive: { image: this.msd.image, connected: this.msd.connected, cdrom: this.msd.cdrom },
      storage: { images, size: total, free: total - used },
    };
  }
}
