/**
 * The fleet replica's configuration: a JSON or YAML file (`--config`), then environment
 * overrides, then defaults, checked by zod; a bad value stops the start naming its key path.
 * The shape is FleetConfig (context.ts).
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { WALL_DEFAULT_INTERVAL_MS, WALL_MIN_INTERVAL_MS } from '@kvm/protocol';
import type { FleetConfig } from './context';

const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    `must be a ${protocols.join(' or ')} URL`,
  );

/** Hosts an http: OpenID Connect issuer may have (a test's provider on this machine). */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/;

const schema = z
  .object({
    replica: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (at most 64)')
      .optional(),
    publicUrl: url(['https:']).optional(),
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(1).max(65535).default(8443),
    tls: z
      .object({ cert: z.string().min(1), key: z.string().min(1) })
      .strict()
      .optional(),
    database: url(['postgres:', 'postgresql:']),
    nats: z.array(url(['nats:', 'tls:'])).default([]),
    turn: z
      .object({
        secret: z.string().min(16),
        uris: z.array(z.string().regex(/^turns?:/, 'a turn: or turns: URI')).min(1),
        ttl_s: z.number().int().min(60).max(86_400).default(3600),
      })
      .strict()
      .nullable()
      .default(null),
    smtp: z
      .object({
        host: z.string().min(1),
        port: z.number().int().min(1).max(65535),
        secure: z.boolean().default(false),
        from: z.string().min(3),
        user: z.string().optional(),
        pass: z.string().optional(),
      })
      .strict()
      .default({ host: '127.0.0.1', port: 25, secure: false, from: 'fleet@localhost' }),
    data: z.string().min(1).default('.data/fleet'),
    // the largest file the fleet holds (4 GiB)
    files: z
      .object({ max_bytes: z.number().int().min(1).default(4_294_967_296) })
      .strict()
      .default({ max_bytes: 4_294_967_296 }),
    trustProxy: z.boolean().default(false),
    oidc: z
      .object({
        issuer: url(['https:', 'http:']).refine(
          (v) => new URL(v).protocol === 'https:' || LOOPBACK.test(new URL(v).hostname),
          'http only on loopback (tests); use https',
        ),
        client_id: z.string().min(1).max(256),
        client_secret: z.string().min(1).max(1024),
        name: z.string().min(1).max(64).default('OpenID Connect'),
        scopes: z
          .array(z.string().regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,64}$/, 'a scope token'))
          .min(1)
          .max(20)
          .refine((s) => s.includes('openid'), "must include 'openid'")
          .default(['openid', 'email', 'profile']),
        redirect_uri: url(['https:', 'http:']).optional(),
        create_users: z.boolean().default(true),
        admin_claim: z
          .object({ name: z.string().min(1).max(128), value: z.string().min(1).max(256) })
          .strict()
          .nullable()
          .default(null),
      })
      .strict()
      .nullable()
      .default(null),
    wall: z
      .object({
        interval_ms: z
          .number()
          .int()
          .min(WALL_MIN_INTERVAL_MS)
          .max(3_600_000)
          .default(WALL_DEFAULT_INTERVAL_MS),
      })
      .strict()
      .default({ interval_ms: WALL_DEFAULT_INTERVAL_MS }),
    events: z
      .object({ keep_days: z.number().int().min(1).max(3650).default(90) })
      .strict()
      .default({ keep_days: 90 }),
    alerts: z
      .object({
        offline_after_s: z.number().int().min(1).max(86_400).default(60),
        scan_s: z.number().min(0.2).max(300).default(5),
      })
      .strict()
      .default({ offline_after_s: 60, scan_s: 5 }),
  })
  .strict();

export class ConfigError extends Error {}

/** Environment overrides (FLEET_*), for containers and systemd units without a file. */
function fromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const str = (name: string, key: string) => {
    const v = env[name];
    if (v !== undefined && v !== '') out[key] = v;
  };
  str('FLEET_REPLICA', 'replica');
  str('FLEET_PUBLIC_URL', 'publicUrl');
  str('FLEET_HOST', 'host');
  str('FLEET_DATABASE_URL', 'database');
  str('FLEET_DATA', 'data');
  if (env.FLEET_PORT) out.port = Number(env.FLEET_PORT);
  if (env.FLEET_NATS_URLS) out.nats = env.FLEET_NATS_URLS.split(',').map((s) => s.trim());
  return out;
}

/** Reads `file` (JSON, or YAML by its extension), applies `env`, checks and completes it. */
export function loadConfig(file: string | null, env: NodeJS.ProcessEnv = process.env): FleetConfig {
  let raw: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new ConfigError(`cannot read ${file}: ${(e as Error).message}`);
    }
    try {
      const parsed: unknown = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new Error('not an object');
      }
      raw = parsed as Record<string, unknown>;
    } catch (e) {
      throw new ConfigError(`${file}: ${(e as Error).message}`);
    }
  }
  return parseConfig({ ...raw, ...fromEnv(env) }, file ? resolve(file, '..') : process.cwd());
}

/** Checks a config object; relative paths are taken from `base`. */
export function parseConfig(raw: unknown, base: string = process.cwd()): FleetConfig {
  const r = schema.safeParse(raw);
  if (!r.success) {
    const first = r.error.issues[0];
    const path = first?.path.join('.') || '(root)';
    throw new ConfigError(`config: ${path}: ${first?.message ?? 'invalid'}`);
  }
  const c = r.data;
  const abs = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const data = abs(c.data);
  const publicUrl = (c.publicUrl ?? `https://${c.host}:${c.port}`).replace(/\/+$/, '');
  return Object.freeze({
    replica: c.replica ?? `fleet-${hostname()}-${c.port}`,
    publicUrl,
    host: c.host,
    port: c.port,
    tls: c.tls
      ? { cert: abs(c.tls.cert), key: abs(c.tls.key) }
      : { cert: join(data, 'tls', 'cert.pem'), key: join(data, 'tls', 'key.pem') },
    database: c.database,
    nats: c.nats,
    turn: c.turn,
    smtp: c.smtp,
    data,
    files: c.files,
    trustProxy: c.trustProxy,
    oidc: c.oidc
      ? {
          ...c.oidc,
          redirect_uri: c.oidc.redirect_uri ?? `${publicUrl}/cloud-basic/v1/oidc/callback`,
        }
      : null,
    wall: c.wall,
    events: c.events,
    alerts: c.alerts,
  });
}
