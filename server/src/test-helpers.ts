/** Shared helpers of the server's route tests (not shipped). */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from './app';

export const PASSWORD = 'correct horse';

export async function tempDataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'kvm-test-'));
}

export async function newApp(
  dataDir?: string,
  overrides: Record<string, unknown> = {},
): Promise<FastifyInstance> {
  return buildTestApp(dataDir ?? (await tempDataDir()), overrides);
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
