/** Shared helpers of the server's route tests (not shipped). */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp, createContext } from './app';
import { buildConfig } from './config';
import type { NetnsNetwork } from './drivers/network/netns';
import { loadConfigDefaults } from './paths';
import { loadOrCreateCertificate } from './services/tls';
import { testTempDir } from './test-temp';

export const PASSWORD = 'correct horse';

/** A new data folder (testTempDir: the suite removes it, whether the test does or not). */
export function tempDataDir(): Promise<string> {
  return testTempDir('data');
}

/** A context and app over a data folder, for tests and benches (no TLS, no logger). */
export async function buildTestApp(
  dataDir: string,
  overrides: Record<string, unknown> = {},
): Promise<FastifyInstance> {
  const config = buildConfig(
    {
      data_dir: dataDir,
      target: 'testbed',
      webrtc: { stun_url: null },
      // bash without the host's dotfiles: a test must not wait on (or break) its profile
      terminal: { shell: '/bin/bash', args: ['--noprofile', '--norc'] },
      ...overrides,
    },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test');
  return buildApp(ctx);
}

/**
 * An app over `dataDir` on HTTPS with the device network in namespaces (`system.network: netns`),
 * not yet listening: the namespace tests' and the apps bench's.
 */
export async function buildNetnsApp(
  dataDir: string,
  version = '0.0.0-test',
): Promise<{ app: FastifyInstance; network: NetnsNetwork }> {
  const config = buildConfig(
    {
      data_dir: dataDir,
      target: 'testbed',
      system: { network: 'netns' },
      webrtc: { stun_url: null },
    },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, version);
  const https = await loadOrCreateCertificate(join(dataDir, 'tls'));
  const app = await buildApp(ctx, { https });
  return { app, network: ctx.drivers.system.network as NetnsNetwork };
}

export async function newApp(
  dataDir?: string,
  overrides: Record<string, unknown> = {},
): Promise<FastifyInstance> {
  return buildTestApp(dataDir ?? (await tempDataDir()), overrides);
}

/** A started test app: initialised, logged in, over its own data folder. */
export interface StartedApp {
  app: FastifyInstance;
  token: string;
  dataDir: string;
}

/**
 * The app of a route test file, one per test: `start` builds it over a new data folder and logs
 * in; `stop` (the file's `afterEach(() => apps.stop())`) closes it and removes the folder.
 */
export class AppPerTest {
  app: FastifyInstance | undefined;
  dataDir: string | undefined;

  async start(overrides: Record<string, unknown> = {}): Promise<StartedApp> {
    const { app, dataDir } = await this.build(overrides);
    return { app, dataDir, token: await initAndLogin(app) };
  }

  /** `start` without the init and login (a test of the unauthenticated or first-run paths). */
  async build(overrides: Record<string, unknown> = {}): Promise<Omit<StartedApp, 'token'>> {
    const dataDir = (this.dataDir = await tempDataDir());
    const app = (this.app = await newApp(dataDir, overrides));
    return { app, dataDir };
  }

  /** Closes the app and builds a new one over the same data folder (a restart); not logged in. */
  async restart(overrides: Record<string, unknown> = {}): Promise<FastifyInstance> {
    if (this.dataDir === undefined) throw new Error('restart before start');
    await this.app?.close();
    this.app = undefined;
    this.app = await newApp(this.dataDir, overrides);
    return this.app;
  }

  async stop(): Promise<void> {
    await this.app?.close();
    if (this.dataDir) await rm(this.dataDir, { recursive: true, force: true });
    this.app = undefined;
    this.dataDir = undefined;
  }
}

/** `app.inject` with a session token under a URL prefix: `call('POST', 'set_param?x=1')`. */
export function caller(
  app: FastifyInstance,
  token: string,
  prefix: string,
): (method: 'GET' | 'POST', url: string) => Promise<LightMyRequestResponse> {
  return (method, url) => app.inject({ method, url: `${prefix}${url}`, headers: { token } });
}

/** `app.inject` with a session token; a `body` goes as JSON: `call('POST', '/api/x', { a: 1 })`. */
export function jsonCaller(
  app: FastifyInstance,
  token: string,
): (method: 'GET' | 'POST', url: string, body?: unknown) => Promise<LightMyRequestResponse> {
  return (method, url, body) =>
    app.inject({
      method,
      url,
      headers: { token, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
}

export function form(fields: Record<string, string>): {
  payload: string;
  headers: Record<string, string>;
} {
  return {
    payload: new URLSearchParams(fields).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  };
}

/** Initialises the device and logs in; returns the session token. */
export async function initAndLogin(app: FastifyInstance, password = PASSWORD): Promise<string> {
  const init = await app.inject({
    method: 'GET',
    url: `/api/init/init?password=${encodeURIComponent(password)}`,
  });
  if (init.statusCode !== 200) throw new Error(`init failed: ${init.body}`);
  return login(app, password);
}

export async function login(app: FastifyInstance, passwd: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    ...form({ user: 'admin', passwd }),
  });
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  return (res.json() as { result: { token: string } }).result.token;
}
