/** What the apps' driver and route tests share (not shipped): recorded outputs, hosts, stand-in tools. */
import { readFileSync } from 'node:fs';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SILENT_LOGGER } from '../../log';
import type { CommandRunner } from '../../process/run';
import type { AppHost } from './types';

/** The folder of one app's recorded tool outputs (fixtures/<app>). */
export function fixturesOf(app: 'tailscale' | 'netbird' | 'zerotier'): string {
  return join(__dirname, 'fixtures', app);
}

/** A reader of one app's recorded outputs: `fixture('version.txt')`. */
export function fixtureReader(app: 'tailscale' | 'netbird' | 'zerotier'): (name: string) => string {
  const folder = fixturesOf(app);
  return (name) => readFileSync(join(folder, name), 'utf8');
}

/** An AppHost on this computer's network over `dir` (apps/ and run/ below it), commands by `runner`. */
export function testHost(
  dir: string,
  runner: CommandRunner,
  extra: Partial<AppHost> = {},
): AppHost {
  return {
    namespace: null,
    unavailable: () => null,
    ready: async () => undefined,
    dataDir: join(dir, 'apps'),
    runDir: join(dir, 'run'),
    log: SILENT_LOGGER,
    runner,
    ...extra,
  };
}

/** Writes an executable shell script `dir/name` running `body`; answers its path. */
export async function writeScript(dir: string, name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

/** A stand-in daemon: runs until it is stopped. */
export const fakeDaemon = (dir: string, name: string): Promise<string> =>
  writeScript(dir, name, 'exec sleep 600');

/** A fake runner's handler answering always `text`. */
export const answer = (text: string) => async (): Promise<string> => text;

/** What the recorded outputs say once answered (the driver and route tests expect the same). */
export const RECORDED = {
  /** ZeroTier's `status` over info-online.json and listnetworks-ok.json, the service running. */
  zerotierStatus: {
    enabled: true,
    process_running: true,
    nwid: '48d6023c46856feb',
    name: 'kvm-net',
    status: 'OK',
    dev: 'ztosiiou5n',
    ips: ['10.147.17.5/24', 'fd48:d602:3c46:856f:eb99:93a5:8298:793a/88'],
    state: 'connected',
    address: 'a58298793a',
  },
  /** NetBird's `get_info` over status-connected.json, the daemon running. */
  netbirdInfo: {
    running: true,
    netbird_ip: '100.92.7.23/16',
    connected: true,
    success: true,
    err_msg: '',
    state: 'connected',
  },
} as const;
