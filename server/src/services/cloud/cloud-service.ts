/**
 * The device's cloud (docs/cloud.md "Device"): the binding store, the fleet's HTTP API, the
 * agent socket and its tunnel, and the panel's state (`CloudStatus`, the `cloud` event). Off
 * unless the admin enables it: while disabled nothing leaves the device. Whatever the fleet
 * does, the device keeps working locally: every fleet fault ends in a state and an error text.
 */
import { EventEmitter } from 'node:events';
import { hostname, networkInterfaces } from 'node:os';
import type { Server } from 'node:net';
import {
  ADMIN_USER,
  AGENT_AUTH_SCHEME,
  AGENT_PATH,
  BIND_CODE_TTL_S,
  CLOUD_EMAIL_RE,
  validateCloudLogin,
  validateCloudSignUp,
  type BindCodeAnswer,
  type BindPollAnswer,
  type BindResult,
  type CloudAgentState,
  type CloudBindCode,
  type CloudLogin,
  type CloudServerProbe,
  type CloudSignUp,
  type CloudStatus,
  type DeviceIdentity,
  type FleetTurn,
} from '@kvm/protocol';
import { ConflictError, ForbiddenError, ValidatorError } from '../../errors';
import type { Logger } from '../../log';
import type { Asker, AuthService } from '../auth/auth-service';
import type { TurnService } from '../turn';
import { watchedStateProvider, type StateProvider } from '../../ws/state-registry';
import { AgentCommandError, CloudAgent, type AgentDeps, type AgentLinkState } from './agent';
import { BindingStore, type CloudFileState } from './binding-store';
import { CloudSessions } from './cloud-sessions';
import { CloudGoneError, FleetClient } from './fleet-client';
import {
  fleetOrigin,
  normalizeFingerprint,
  parseFleetUrl,
  probeFleet,
  type FleetTrust,
} from './fleet-tls';
import { Tunnel, type LocalTarget } from './tunnel';
import { wallSnapshot, type CloudSnapshotSource } from './snapshot';

export type { CloudSnapshotSource } from './snapshot';

/** 409: the cloud is off; nothing leaves the device. */
export class CloudDisabledError extends ConflictError {
  constructor() {
    super('The cloud is disabled: enable it first');
  }
}
/** 409: bound already (unbind first), or not bound where a binding is needed. */
export class CloudBindingError extends ConflictError {}
/** 400: no fleet server set, or a pin without a probe of that server. */
export class CloudServerError extends ValidatorError {}
/** 403: the admin password (or the 2FA code) given for unbinding is wrong. */
export class CloudUnbindFailedError extends ForbiddenError {
  constructor() {
    super('unbind failed');
  }
}
/** 400: a sign-up or login field breaks SPEC 5's rules; `field` and `reason` say which. */
export class CloudFormError extends ValidatorError {
  constructor(field: string, reason: string) {
    super(`The argument '${field}' is not valid (${reason})`, { field, reason });
  }
}

export interface CloudIdentitySource {
  mac(): Promise<string>;
  serial(): Promise<string>;
}

export interface CloudServiceOptions {
  dataDir: string;
  config: { enabled: boolean; url: string | null; timeout_ms: number };
  version: string;
  model: string;
  auth: AuthService;
  turn: TurnService;
  identity: CloudIdentitySource;
  snapshots: CloudSnapshotSource | null;
  /** Lifetime of the console sessions of fleet users (sliding). */
  sessionLifetimeMs: number;
  log: Logger;
  /** Tests: the agent's clock, jitter and timings; the bind poll's pause after an error. */
  agent?: Pick<AgentDeps, 'clock' | 'random' | 'timing'>;
  pollRetryMs?: number;
}

const MAC_RE = /^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/;

/**
 * The MAC of the first interface that is not loopback, when the network driver has none (a
 * disabled network driver); all zeros when the machine has none at all.
 */
function hostMac(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const nic of list ?? []) {
      if (!nic.internal && MAC_RE.test(nic.mac) && nic.mac !== '00:00:00:00:00:00') return nic.mac;
    }
  }
  return '00:00:00:00:00:00';
}

function firstError(errors: Record<string, string | undefined>): void {
  const entry = Object.entries(errors).find(([, v]) => v !== undefined);
  if (entry) throw new CloudFormError(entry[0], entry[1]!);
}

const clip = (v: unknown, n: number): string => (typeof v === 'string' ? v.slice(0, n) : '');

export class CloudService extends EventEmitter<{ state: [CloudStatus] }> {
  private agent: CloudAgent | null = null;
  private link: { state: AgentLinkState; replica: string | null; error: string | null } = {
    state: 'idle',
    replica: null,
    error: null,
  };
  private revoked = false;
  /** Why the last bind or call failed (shown while not online). */
  private lastError: string | null = null;
  private probe: { origin: string; fingerprint: string; pem: string } | null = null;
  private code: { code: string; expiresAt: number; abort: AbortController } | null = null;
  private ident: DeviceIdentity;
  private localTarget: (() => LocalTarget | null) | null = null;
  readonly tunnel: Tunnel;
  readonly sessions: CloudSessions;
  private disposed = false;

  private constructor(
    private readonly store: BindingStore,
    private readonly opts: CloudServiceOptions,
    identity: DeviceIdentity,
  ) {
    super();
    this.ident = identity;
    this.sessions = new CloudSessions(opts.auth.sessions, opts.sessionLifetimeMs, opts.log);
    this.tunnel = new Tunnel({
      local: () => this.localTarget?.() ?? null,
      sessions: this.sessions,
      log: opts.log,
    });
  }

  static async open(opts: CloudServiceOptions): Promise<CloudService> {
    const store = await BindingStore.open(
      opts.dataDir,
      { enabled: opts.config.enabled, url: opts.config.url },
      opts.log,
    );
    const service = new CloudService(store, opts, await CloudService.identityOf(opts));
    service.apply();
    return service;
  }

  private static async identityOf(opts: CloudServiceOptions): Promise<DeviceIdentity> {
    const [mac, serial] = await Promise.all([
      opts.identity.mac().catch(() => ''),
      opts.identity.serial().catch(() => ''),
    ]);
    return {
      mac: MAC_RE.test(mac) ? mac.toLowerCase() : hostMac(),
      serial,
      name: hostname().slice(0, 64) || 'kvm',
      model: opts.model,
      version: opts.version,
    };
  }

  /** Where the device's own server listens (app.ts, once it is built). */
  attachLocal(target: () => LocalTarget | null): void {
    this.localTarget = target;
  }

  /** The panel's state (SPEC 4); never the secret. */
  getState(): CloudStatus {
    const s = this.store.get();
    const bound = this.store.bound();
    let state: CloudAgentState;
    if (!s.enabled) state = 'disabled';
    else if (this.revoked && !bound) state = 'revoked';
    else if (!bound) state = 'unbound';
    else if (this.link.state === 'online') state = 'online';
    else if (this.link.state === 'offline') state = 'offline';
    else state = 'connecting';
    return {
      enabled: s.enabled,
      bound,
      state,
      url: s.url,
      pinned: s.pinned,
      device: { id: s.device_id, mac: this.ident.mac, serial: this.ident.serial },
      account: s.account ? { ...s.account } : null,
      bound_at: s.bound_at,
      replica: state === 'online' ? this.link.replica : null,
      error: state === 'online' ? null : (this.link.error ?? this.lastError),
    };
  }

  provider(): StateProvider {
    return watchedStateProvider('cloud', this);
  }

  private changed(): void {
    if (!this.disposed) this.emit('state', this.getState());
  }

  private trust(s: Readonly<CloudFileState> = this.store.get()): FleetTrust {
    return { pinned: s.pinned, pinnedCert: s.pinned_cert };
  }

  private client(): FleetClient {
    const s = this.store.get();
    if (!s.url) throw new CloudServerError('Set the fleet server first (POST /api/cloud/server)');
    return new FleetClient(s.url, this.trust(s));
  }

  private requireEnabled(): void {
    if (!this.store.get().enabled) throw new CloudDisabledError();
  }

  private requireUnbound(): void {
    if (this.store.bound()) {
      throw new CloudBindingError('The device is bound already: unbind it first');
    }
  }

  private get timeoutMs(): number {
    return this.opts.config.timeout_ms;
  }

  /** Starts or stops the agent to match the switch and the binding. */
  private apply(): void {
    const s = this.store.get();
    const want = s.enabled && this.store.bound() && s.url !== null;
    if (want && !this.agent) {
      this.agent = this.makeAgent();
      this.agent.start();
    } else if (!want && this.agent) {
      const agent = this.agent;
      this.agent = null;
      agent.stop();
      this.link = { state: 'idle', replica: null, error: null };
      this.opts.turn.setFleet(null);
    }
    this.changed();
  }

  /** A new agent from scratch (after a new binding or a new pin). */
  private restartAgent(): void {
    if (this.agent) {
      const agent = this.agent;
      this.agent = null;
      agent.stop();
    }
    this.apply();
  }

  private makeAgent(): CloudAgent {
    const agent: CloudAgent = new CloudAgent({
      credentials: () => {
        const s = this.store.get();
        if (!s.device_id || !s.secret) return null;
        return { deviceId: s.device_id, secret: s.secret, endpoints: s.endpoints };
      },
      trust: () => this.trust(),
      identity: async () => this.ident,
      version: this.opts.version,
      log: this.opts.log,
      tunnel: this.tunnel,
      onRevoked: (by) => {
        this.revoke(by).catch((err: unknown) => {
          this.opts.log.error({ err }, 'cloud: the revoked binding could not be forgotten');
        });
      },
      onTurn: (turn: FleetTurn | null) => {
        if (this.agent === agent) this.opts.turn.setFleet(turn);
      },
      onState: (state, info) => {
        if (this.agent !== agent) return;
        this.link = { state, replica: info.replica, error: info.error };
        if (state === 'online') this.lastError = null;
        this.changed();
      },
      onEndpoints: (endpoints) => {
        const now = this.store.get().endpoints;
        if (JSON.stringify(now) === JSON.stringify(endpoints) || !this.store.bound()) return;
        this.store.update({ endpoints }).catch((err: unknown) => {
          this.opts.log.warn({ err }, 'cloud: the endpoints could not be saved');
        });
      },
      command: (name, args) => this.command(name, args),
      ...this.opts.agent,
      timing: { helloMs: this.opts.config.timeout_ms, ...this.opts.agent?.timing },
    });
    this.tunnel.attach({
      control: (frame) => agent.sendRaw(JSON.stringify(frame)),
      binary: (frame) => agent.sendRaw(frame),
    });
    return agent;
  }

  private async command(name: string, args: Record<string, unknown>): Promise<unknown> {
    switch (name) {
      case 'info':
        return {
          identity: this.ident,
          version: this.opts.version,
          model: this.opts.model,
          uptime_s: Math.round(process.uptime()),
        };
      case 'snapshot':
        return wallSnapshot(this.opts.snapshots, args);
      case 'unbind':
        return { unbound: true };
      default:
        throw new AgentCommandError('unknown_command', 'Unknown command');
    }
  }

  /** The fleet ended the binding: forget it, end the fleet users' sessions, say `revoked`. */
  private async revoke(by: string): Promise<void> {
    this.opts.log.warn({ by }, 'cloud: the binding was revoked by the fleet; secret forgotten');
    await this.forget();
    this.revoked = true;
    this.changed();
  }

  private async forget(): Promise<void> {
    this.cancelCode();
    if (this.agent) {
      const agent = this.agent;
      this.agent = null;
      agent.stop();
    }
    this.link = { state: 'idle', replica: null, error: null };
    this.opts.turn.setFleet(null);
    this.tunnel.closeAll();
    try {
      await this.store.forget();
    } finally {
      await this.sessions.endAll();
      this.changed();
    }
  }

  // ---- the panel's verbs -----------------------------------------------------------------

  async setEnabled(enable: boolean): Promise<CloudStatus> {
    await this.store.update({ enabled: enable });
    if (!enable) this.cancelCode();
    this.apply();
    return this.getState();
  }

  /** Probes the fleet's certificate; a trusted one sets the server, an untrusted one waits for a pin. */
  async setServer(text: unknown): Promise<CloudServerProbe> {
    this.requireEnabled();
    const url = parseFleetUrl(text);
    const origin = fleetOrigin(url);
    const s = this.store.get();
    if (this.store.bound() && s.url !== origin) {
      throw new CloudBindingError('The device is bound to another fleet: unbind it first');
    }
    const { probe, pem } = await probeFleet(url, this.timeoutMs);
    this.probe = { origin, fingerprint: probe.fingerprint, pem };
    if (s.url !== origin) {
      this.cancelCode();
      await this.store.update({ url: origin, pinned: null, pinned_cert: null });
    } else if (probe.trusted && s.pinned !== null) {
      await this.store.update({ pinned: null, pinned_cert: null });
      this.restartAgent();
    }
    this.changed();
    return probe;
  }

  /** Pins the certificate the last probe of the set server showed. */
  async trustServer(fingerprint: unknown): Promise<CloudStatus> {
    this.requireEnabled();
    const fp = normalizeFingerprint(fingerprint);
    if (!fp) {
      throw new ValidatorError(
        "The argument 'fingerprint' must be a SHA-256 fingerprint (64 hex digits, colons allowed)",
      );
    }
    const s = this.store.get();
    const probe = this.probe;
    if (!s.url || !probe || probe.origin !== s.url) {
      throw new CloudServerError('Probe the fleet server first (POST /api/cloud/server)');
    }
    if (probe.fingerprint !== fp) {
      throw new CloudServerError(
        'The fingerprint is not the one the fleet showed: probe it again and compare',
      );
    }
    await this.store.update({ pinned: fp, pinned_cert: probe.pem });
    this.opts.log.info({ url: s.url, fingerprint: fp }, 'cloud: fleet certificate pinned');
    this.restartAgent();
    return this.getState();
  }

  private cancelCode(): void {
    this.code?.abort.abort();
    this.code = null;
  }

  /** A live bind code (GL's get_dynamic_code), or a new one. */
  async currentCode(): Promise<CloudBindCode> {
    const c = this.code;
    if (c && c.expiresAt > Date.now() + 1000) {
      return { code: c.code, expires_in: Math.floor((c.expiresAt - Date.now()) / 1000) };
    }
    return this.bindCode();
  }

  /** Asks the fleet for a code and collects the binding in the background. */
  async bindCode(): Promise<CloudBindCode> {
    this.requireEnabled();
    this.requireUnbound();
    const client = this.client();
    const answer = await client.post<BindCodeAnswer>(
      'bind/codes',
      { device: this.ident },
      { timeoutMs: this.timeoutMs },
    );
    const code = clip(answer?.code, 32);
    const claim = clip(answer?.claim_token, 512);
    if (!/^\d{4,16}$/.test(code) || !claim) {
      throw new CloudServerError('The fleet answered no usable bind code');
    }
    const ttl = Math.min(
      typeof answer.expires_in === 'number' && answer.expires_in > 0
        ? answer.expires_in
        : BIND_CODE_TTL_S,
      BIND_CODE_TTL_S * 10,
    );
    this.cancelCode();
    const abort = new AbortController();
    const expiresAt = Date.now() + ttl * 1000;
    this.code = { code, expiresAt, abort };
    this.lastError = null;
    void this.collect(client, claim, expiresAt, abort.signal);
    return { code, expires_in: ttl };
  }

  private async collect(
    client: FleetClient,
    claim: string,
    expiresAt: number,
    signal: AbortSignal,
  ): Promise<void> {
    while (!signal.aborted && Date.now() < expiresAt && !this.disposed) {
      try {
        const answer = await client.post<BindPollAnswer>(
          'bind/poll',
          { claim_token: claim },
          { timeoutMs: this.timeoutMs, signal },
        );
        if (signal.aborted) return;
        if (answer && answer.pending === false) {
          await this.saveBinding(answer);
          break;
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof CloudGoneError) break;
        this.lastError = (err as Error).message;
        this.changed();
        await new Promise((r) => setTimeout(r, this.opts.pollRetryMs ?? 2000).unref());
      }
    }
    if (this.code?.abort.signal === signal) this.code = null;
  }

  private async saveBinding(result: BindResult): Promise<void> {
    const s = this.store.get();
    const deviceId = clip(result?.device_id, 128);
    const secret = clip(result?.secret, 512);
    const username = clip(result?.account?.username, 64);
    if (!deviceId || !/^[A-Za-z0-9_-]{16,512}$/.test(secret) || !username || !s.url) {
      throw new CloudServerError('The fleet answered no usable binding');
    }
    const host = new URL(s.url).host;
    const endpoints = Array.isArray(result.endpoints)
      ? result.endpoints.filter((e) => typeof e === 'string' && /^wss:\/\//.test(e)).slice(0, 16)
      : [];
    await this.store.update({
      device_id: deviceId,
      secret,
      account: { username, email: clip(result.account.email, 254) },
      bound_at: Math.floor(Date.now() / 1000),
      endpoints: endpoints.length > 0 ? endpoints : [`wss://${host}${AGENT_PATH}`],
    });
    this.revoked = false;
    this.lastError = null;
    // a login bound the device while a code was shown: that code's poll ends here
    this.cancelCode();
    this.opts.log.info({ device_id: deviceId, account: username }, 'cloud: device bound');
    this.restartAgent();
  }

  /** SPEC 5's login form: binds the device to that fleet account. */
  async bindLogin(form: Partial<CloudLogin>): Promise<CloudStatus> {
    this.requireEnabled();
    firstError(validateCloudLogin(form));
    this.requireUnbound();
    const totp = typeof form.totp === 'string' && form.totp !== '' ? form.totp : undefined;
    if (totp !== undefined && !/^\d{6}$/.test(totp))
      throw new CloudFormError('totp', 'totp_invalid');
    const result = await this.client().post<BindResult>(
      'bind/login',
      {
        username: form.username,
        password: form.password,
        region: form.region,
        ...(totp ? { totp } : {}),
        device: this.ident,
      },
      { timeoutMs: this.timeoutMs },
    );
    await this.saveBinding(result);
    return this.getState();
  }

  async signupEmailCode(email: unknown): Promise<void> {
    this.requireEnabled();
    if (typeof email !== 'string' || !CLOUD_EMAIL_RE.test(email)) {
      throw new CloudFormError('email', 'email_invalid');
    }
    await this.client().post('signup/email-code', { email }, { timeoutMs: this.timeoutMs });
  }

  /** SPEC 5's sign-up form; the new account then binds the device (as a login). */
  async signup(form: Partial<CloudSignUp>): Promise<CloudStatus> {
    this.requireEnabled();
    firstError(validateCloudSignUp(form));
    this.requireUnbound();
    await this.client().post(
      'signup',
      {
        username: form.username,
        email: form.email,
        email_code: form.email_code,
        password: form.password,
        privacy: form.privacy,
        region: form.region,
      },
      { timeoutMs: this.timeoutMs },
    );
    return this.bindLogin({
      username: form.username,
      password: form.password,
      region: form.region,
    });
  }

  /**
   * The admin unbinds on the device: the admin password, plus the 2FA code when 2FA is on
   * (checked as a login: the same rate limit). The fleet is told (over the socket, or by HTTP
   * when offline); the binding is forgotten either way.
   */
  async unbind(passwd: string, code: string | undefined, asker: Asker): Promise<CloudStatus> {
    if (!this.store.bound()) throw new CloudBindingError('The device is not bound');
    try {
      await this.opts.auth.login({
        user: ADMIN_USER,
        passwd,
        ...(code !== undefined ? { code } : {}),
        expireS: 0,
        ip: asker.ip,
        dryRun: true,
        onFailure: asker.onFailure,
      });
    } catch (err) {
      if (err instanceof ForbiddenError || err instanceof ValidatorError) {
        throw new CloudUnbindFailedError();
      }
      throw err;
    }
    const s = this.store.get();
    const told = (await this.agent?.sayUnbound()) ?? false;
    if (!told && s.url && s.device_id && s.secret) {
      await new FleetClient(s.url, this.trust(s))
        .post(
          'device/unbind',
          {},
          {
            timeoutMs: this.timeoutMs,
            headers: { authorization: `${AGENT_AUTH_SCHEME} ${s.device_id}:${s.secret}` },
          },
        )
        .catch((err: unknown) => {
          this.opts.log.warn(
            { err: (err as Error).message },
            'cloud: the fleet was not told of the unbinding',
          );
        });
    }
    this.opts.log.info({ device_id: s.device_id }, 'cloud: device unbound by the admin');
    this.revoked = false;
    await this.forget();
    return this.getState();
  }

  dispose(): void {
    this.disposed = true;
    this.cancelCode();
    const agent = this.agent;
    this.agent = null;
    agent?.stop();
    this.tunnel.closeAll();
  }
}

/** Where the device's own server listens, for the tunnel: loopback when it listens on all. */
export function localTargetOf(server: Server, cert: string | Buffer | null): LocalTarget | null {
  const address = server.address();
  if (!address || typeof address !== 'object') return null;
  let host = address.address;
  if (host === '0.0.0.0' || host === '') host = '127.0.0.1';
  else if (host === '::') host = '::1';
  const shown = host.includes(':') ? `[${host}]` : host;
  return { origin: `${cert ? 'https' : 'http'}://${shown}:${address.port}`, cert };
}
