/**
 * The device ID (SPEC "Cloud binding info: device ID, device MAC, device S/N"; shown in the
 * About dialog): one stable identifier of this device, the same across restarts, upgrades and
 * a reset of the data folder. Not the host name (a setting the admin changes).
 *
 * Derived from the machine's `/etc/machine-id` as its manual page asks applications to: keyed
 * with this application's own key (HMAC-SHA256), so the machine id itself is never shown and
 * the value says nothing to another application. A machine without one (a bare container)
 * gets a random id kept in the data folder (`<data>/device-id`).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atomicWriteFile } from '../storage/atomic';

/** systemd's and D-Bus's copies, in the order systemd documents. */
export const MACHINE_ID_PATHS = ['/etc/machine-id', '/var/lib/dbus/machine-id'];
/** This application's key for the machine id (a constant: the result must not change). */
const APP_KEY = 'kvm-console device id v1';
const FORMAT = /^[0-9A-F]{4}(-[0-9A-F]{4}){3}$/;

/** 16 hex digits in four groups: `3F2A-91C0-7B44-E1D9`. */
function format(hex: string): string {
  return hex.slice(0, 16).toUpperCase().match(/.{4}/g)!.join('-');
}

async function machineId(paths: readonly string[]): Promise<string | null> {
  for (const path of paths) {
    const text = await readFile(path, 'utf8').catch(() => '');
    const id = text.trim().toLowerCase();
    // An all-zero or "uninitialized" id is no identity (machine-id(5)).
    if (/^[0-9a-f]{32}$/.test(id) && !/^0+$/.test(id)) return id;
  }
  return null;
}

export async function deviceId(
  dataDir: string,
  opts: { machineIdPaths?: readonly string[] } = {},
): Promise<string> {
  const machine = await machineId(opts.machineIdPaths ?? MACHINE_ID_PATHS);
  if (machine) return format(createHmac('sha256', APP_KEY).update(machine).digest('hex'));
  const file = join(dataDir, 'device-id');
  const kept = (await readFile(file, 'utf8').catch(() => '')).trim();
  if (FORMAT.test(kept)) return kept;
  const made = format(randomBytes(8).toString('hex'));
  await atomicWriteFile(file, `${made}\n`, 0o644);
  return made;
}
