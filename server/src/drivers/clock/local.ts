/**
 * The clock and time zone without systemd: the zone is `/etc/localtime` under a root folder
 * (a symlink into the zoneinfo database, plus `/etc/timezone`), as Debian keeps it.
 *
 * - On a device (`kind: 'system'`, root `/`) the clock is the system clock (`date -s`).
 * - On the developer targets (`kind: 'offset'`) the root is a folder of the data folder and the
 *   device clock is the host clock plus an offset kept in `clock-offset` beside it: setting the
 *   time never touches the host's clock or zone.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, readlink, rename, symlink, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { runCommand } from '../../process/run';
import type { ClockDriver } from './types';

export { ZONEINFO_DIR } from './types';
import { ZONEINFO_DIR } from './types';

export interface LocalClockOptions {
  /** The folder that holds `etc/localtime` (a device: `/`). */
  root: string;
  kind: 'system' | 'offset';
  zoneinfoDir?: string;
}

export class LocalClock implements ClockDriver {
  readonly name = 'localtime';
  readonly kind: 'system' | 'offset';
  private offsetMs = 0;
  private readonly root: string;
  private readonly zoneinfo: string;

  constructor(opts: LocalClockOptions) {
    this.kind = opts.kind;
    this.root = opts.root;
    this.zoneinfo = opts.zoneinfoDir ?? ZONEINFO_DIR;
  }

  private get localtime(): string {
    return join(this.root, 'etc', 'localtime');
  }

  private get offsetFile(): string {
    return join(this.root, 'etc', 'clock-offset');
  }

  now(): number {
    return Date.now() + this.offsetMs;
  }

  async zone(): Promise<string> {
    try {
      const target = await readlink(this.localtime);
      const rel = relative(this.zoneinfo, target);
      if (!rel.startsWith('..')) return rel.replace(/^(posix|right)\//, '');
    } catch {
      // no symlink: fall through
    }
    try {
      const name = (await readFile(join(this.root, 'etc', 'timezone'), 'utf8')).trim();
      if (name) return name;
    } catch {
      // none
    }
    return 'UTC';
  }

  /** `name` must be a zone of the database (the service checks it first). */
  async setZone(name: string): Promise<void> {
    const file = join(this.zoneinfo, name);
    if (!existsSync(file)) throw new Error(`no zone file ${file}`);
    await mkdir(dirname(this.localtime), { recursive: true });
    // a new symlink renamed over the old one: never a moment without /etc/localtime
    const tmp = `${this.localtime}.tmp-${process.pid}`;
    await unlink(tmp).catch(() => undefined);
    await symlink(file, tmp);
    await rename(tmp, this.localtime);
    const tz = join(this.root, 'etc', 'timezone');
    await writeFile(`${tz}.tmp`, `${name}\n`);
    await rename(`${tz}.tmp`, tz);
  }

  async setTime(unixMs: number): Promise<void> {
    if (this.kind === 'system') {
      await runCommand('date', ['-u', '-s', `@${Math.floor(unixMs / 1000)}`], { timeoutMs: 5000 });
      this.offsetMs = 0;
      return;
    }
    this.offsetMs = unixMs - Date.now();
    await mkdir(dirname(this.offsetFile), { recursive: true });
    await writeFile(`${this.offsetFile}.tmp`, `${Math.round(this.offsetMs)}\n`);
    await rename(`${this.offsetFile}.tmp`, this.offsetFile);
  }

  async init(): Promise<void> {
    if (this.kind !== 'offset') return;
    try {
      const n = Number((await readFile(this.offsetFile, 'utf8')).trim());
      if (Number.isFinite(n)) this.offsetMs = n;
    } catch {
      this.offsetMs = 0;
    }
  }

  async dispose(): Promise<void> {}
}
