/**
 * What the fleet's parts share (docs/cloud.md): the core (accounts, devices, binding, pages)
 * builds a FleetContext; the relay (agent endpoint, NATS bus, tunnel, TURN) registers its routes
 * on the same Fastify app through it. The interfaces are the contract between the two halves.
 */
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { DeviceIdentity, FleetRole, FleetTurn } from '@kvm/protocol';

export interface FleetConfig {
  /** This replica's name (unique among replicas; `fleet-<host>-<port>` by default). */
  replica: string;
  /** Where it listens: `https://host:port` as devices and browsers reach it. */
  publicUrl: string;
  host: string;
  port: number;
  /** TLS certificate and key (PEM files); made self-signed at first start when missing. */
  tls: { cert: string; key: string };
  /** PostgreSQL connection string. */
  database: string;
  /** NATS server URLs. */
  nats: string[];
  /** coturn: REST secret, the URIs given out, and the credentials' lifetime. */
  turn: { secret: string; uris: string[]; ttl_s: number } | null;
  /** Outgoing mail (sign-up codes). */
  smtp: { host: string; port: number; secure: boolean; from: string; user?: string; pass?: string };
  /** The data folder (certificate, secrets made at first start). */
  data: string;
  /** Behind a reverse proxy: the client address is X-Real-IP / X-Forwarded-For (rate limits). */
  trustProxy?: boolean;
  /** Files the fleet holds (`<data>/files/`): the largest one (default 4 GiB). */
  files?: { max_bytes: number };
  /** The screen wall: how often a watched device is asked for a snapshot (ms, default 5000). */
  wall?: { interval_ms: number };
  /** Sign-in with an OpenID Connect provider (docs/cloud.md "Users, groups and roles"), or none. */
  oidc?: FleetOidcConfig | null;
  /** The event log: events older than `keep_days` (default 90) are deleted by the sweep. */
  events?: { keep_days: number };
  /**
   * Alerts: a device offline longer than `offline_after_s` (default 60) raises `device_offline`
   * (once per offline period); each replica's scanner looks every `scan_s` (default 5).
   */
  alerts?: { offline_after_s: number; scan_s: number };
}

export interface FleetOidcConfig {
  /** The provider's issuer URL (https; http only on loopback, for tests). */
  issuer: string;
  client_id: string;
  client_secret: string;
  /** What the sign-in button says ("Sign in with <name>"). */
  name: string;
  scopes: string[];
  /** Where the provider sends the browser back: publicUrl + /cloud-basic/v1/oidc/callback. */
  redirect_uri: string;
  /** Make an account for a provider user the fleet does not know (else refused). */
  create_users: boolean;
  /** A new account is an admin when its ID token's claim `name` is (or lists) `value`. */
  admin_claim: { name: string; value: string } | null;
}

export type { FleetRole } from '@kvm/protocol';

/** A signed-in fleet user. */
export interface FleetUser {
  accountId: string;
  username: string;
  role: FleetRole;
}

/** A device row, as the relay needs it. */
export interface FleetDevice {
  id: string;
  accountId: string;
  name: string;
  identity: DeviceIdentity;
  revoked: boolean;
}

/** The core's device registry, as the relay uses it. */
export interface DeviceDirectory {
  /**
   * The device whose id and secret these are (constant-time compare of the secret's hash), or
   * why not: unknown (also for a wrong secret), revoked (the fleet ended the binding), or the
   * fingerprint differs from the one recorded at binding (a secret on other hardware).
   */
  authenticate(
    deviceId: string,
    secret: string,
    fingerprint: { mac: string; serial: string },
  ): Promise<
    { ok: true; device: FleetDevice } | { ok: false; reason: 'unknown' | 'revoked' | 'fingerprint' }
  >;
  /** The device if `user` may open it (owns it), else null. */
  forUser(user: FleetUser, deviceId: string): Promise<FleetDevice | null>;
  /** Presence: which replica holds the device's socket (null: offline), and when last seen. */
  setPresence(deviceId: string, replica: string | null): Promise<void>;
  /**
   * Appends to the event log (device connected, refused, console opened, ...): `actor` is who
   * did it (a username); events/events.ts `record` writes it.
   */
  event(
    kind: string,
    fields: {
      deviceId?: string;
      accountId?: string;
      actor?: string;
      detail?: Record<string, unknown>;
    },
  ): Promise<void>;
  /** The device unbound itself (the agent said so): the binding ends on the fleet too. */
  unboundByDevice(deviceId: string): Promise<void>;
}

/** The relay, as the core uses it (unbinding from the fleet reaches the device through it). */
export interface DeviceRelay {
  /** Tells the device its binding was removed (if its socket is on any replica). */
  notifyUnbound(deviceId: string): Promise<void>;
  /** Whether the device's socket is on some replica now. */
  online(deviceId: string): Promise<boolean>;
  /** The devices whose sockets this replica holds now. */
  held?(): string[];
  /** Short-lived TURN REST credentials for `name` (null: no TURN configured). */
  turnFor(name: string): FleetTurn | null;
  /** The agent URLs of the live replicas, this one first (a new binding gets them). */
  endpoints?(): string[];
}

export interface FleetContext {
  config: FleetConfig;
  log: Logger;
  devices: DeviceDirectory;
  /** The fleet user of a request (its session cookie), or null. */
  userOf(req: FastifyRequest): Promise<FleetUser | null>;
  /** Set by the relay when it registers. */
  relay: DeviceRelay | null;
}
