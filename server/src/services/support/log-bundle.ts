/**
 * The log bundle (`GET /api/upgrade/log`, support submissions): the server's logs, the front
 * end's last posted log, versions, the configuration, every service's state and the network
 * and system parameters, all masked (mask.ts), zipped in memory within a cap.
 */
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWriteFile } from '../../storage/atomic';
import { buildZip, type ZipEntry } from '../../storage/zip';
import { maskText, maskValue } from './mask';

/** At most this much log text goes into one bundle (the newest bytes of the newest files). */
export const LOG_BUNDLE_LOG_BYTES = 20 * 1024 * 1024;
/** The front end's log (POST /api/upgrade/log, GL 1.10). */
export const FRONTEND_LOG_MAX_BYTES = 1024 * 1024;
export const FRONTEND_LOG_NAME = 'frontend.log';

export interface LogBundleDeps {
  dataDir: string;
  /** Versions: firmware, Node, target, guest image manifest if any. */
  versions: () => Promise<Record<string, unknown>> | Record<string, unknown>;
  /** The configuration (masked here again by key name). */
  config: unknown;
  /** Named state parts: `state` (the registry's snapshot), `network`, `system`... */
  parts: () => Promise<Record<string, unknown>>;
}

/** `YYYYmmdd_HHMMSS` in UTC, GL's file-name stamp. */
export function stamp(date = new Date()): string {
  return date
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/-/g, '')
    .replace(/:/g, '')
    .replace('T', '_');
}

async function tail(path: string, bytes: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, bytes);
    const buf = Buffer.alloc(length);
    await handle.read(buf, 0, length, size - length);
    return buf;
  } finally {
    await handle.close();
  }
}

export class LogBundle {
  constructor(private readonly deps: LogBundleDeps) {}

  get logsDir(): string {
    return join(this.deps.dataDir, 'logs');
  }

  /** Stores the front end's log for the next bundle (the caller bounds the size). */
  async saveFrontendLog(text: string): Promise<void> {
    await atomicWriteFile(join(this.logsDir, FRONTEND_LOG_NAME), text);
  }

  /** The newest log files first, within LOG_BUNDLE_LOG_BYTES in all. */
  private async logEntries(): Promise<ZipEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.logsDir);
    } catch {
      return [];
    }
    const files = (
      await Promise.all(
        names
          .filter((n) => !n.startsWith('.'))
          .map(async (name) => {
            const s = await stat(join(this.logsDir, name)).catch(() => null);
            return s?.isFile() ? { name, mtime: s.mtimeMs } : null;
          }),
      )
    ).filter((f): f is { name: string; mtime: number } => f !== null);
    files.sort((a, b) => b.mtime - a.mtime);
    const out: ZipEntry[] = [];
    let budget = LOG_BUNDLE_LOG_BYTES;
    for (const f of files) {
      if (budget <= 0) break;
      const data = await tail(join(this.logsDir, f.name), budget).catch(() => null);
      if (!data) continue;
      budget -= data.length;
      out.push({ name: `logs/${f.name}`, data: maskText(data.toString('utf8')) });
    }
    return out;
  }

  async build(now = new Date()): Promise<{ name: string; zip: Buffer }> {
    const json = (v: unknown): string => `${JSON.stringify(maskValue(v), null, 2)}\n`;
    const parts = await this.deps.parts();
    const entries: ZipEntry[] = [
      ...(await this.logEntries()),
      { name: 'versions.json', data: json(await this.deps.versions()) },
      { name: 'config.json', data: json(this.deps.config) },
      ...Object.entries(parts).map(([k, v]) => ({ name: `${k}.json`, data: json(v) })),
    ];
    return { name: `system_logs_${stamp(now)}.zip`, zip: buildZip(entries, now) };
  }
}
