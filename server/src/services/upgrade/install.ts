/**
 * The install steps of `start` (docs/upgrade.md): the waiting package is verified (signature,
 * every hash, model, min_version) while it is unpacked into a staging folder beside the idle
 * slot; only a complete, verified tree replaces the slot (one rename), reaches the disk, and is
 * recorded as the trial the launcher boots (install/boot.ts: trial, health check, rollback).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { formatVersion, type UpgradeStartResult } from '@kvm/protocol';
import { ConflictError } from '../../errors';
import {
  idleSlot,
  readCurrent,
  slotRoot,
  slotUsable,
  writeTrial,
  type InstallLayout,
} from '../../install/install-dir';
import type { Logger } from '../../log';
import { runCommand } from '../../process/run';
import { fsyncDirSync } from '../../storage/atomic';
import { messageOf } from './channel';
import { loadTrustedKeys, verifyPackage } from './package-reader';

/**
 * 409: the waiting package is a signed, valid release older than the running one; `start`
 * installs it only with `allow_downgrade=1` (the console asks the admin first). The envelope
 * carries both versions.
 */
export class UpgradeDowngradeError extends ConflictError {}

/** `POST /api/upgrade/start`'s arguments, parsed by the route. */
export interface UpgradeStartRequest {
  saveConfig: boolean;
  skipVerify: boolean;
  allowDowngrade?: boolean;
}

export interface InstallContext {
  packagePath: string;
  install: InstallLayout;
  trustedKeys: readonly string[];
  model: string;
  /** The running version, as the console shows it. */
  localVersion: string;
  dataDir: string;
  log: Logger;
}

/** A refusal before any check of the package: GL's shape without the two flags. */
export function failed(message: string): UpgradeStartResult {
  return {
    status: 'Upgrade failed',
    message,
    stdout: '',
    stderr: '',
  };
}

/**
 * Unpacks the verified package into the idle slot and records the trial. Answers GL's shape
 * either way (`Upgrade started` once the trial is written); throws only UpgradeDowngradeError.
 */
export async function installPackage(
  ctx: InstallContext,
  opts: UpgradeStartRequest,
): Promise<UpgradeStartResult> {
  const { install, log } = ctx;
  try {
    let keys;
    try {
      keys = await loadTrustedKeys(ctx.trustedKeys);
    } catch (e) {
      return failed(messageOf(e));
    }
    const from = readCurrent(install);
    const slot = idleSlot(from);
    const dest = slotRoot(install, slot);
    const staging = `${dest}.new`;
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true });
    const began = performance.now();
    const result = await verifyPackage(ctx.packagePath, keys, ctx.model, ctx.localVersion, {
      extractTo: staging,
      allowUnsigned: opts.skipVerify,
      allowDowngrade: opts.allowDowngrade === true,
    });
    const trusted = result.signature_valid || opts.skipVerify;
    if (result.downgrade && result.manifest) {
      await rm(staging, { recursive: true, force: true });
      const pkgVersion = formatVersion(result.manifest.version) ?? result.manifest.version;
      log.warn(
        { version: pkgVersion, running: ctx.localVersion },
        'upgrade refused: an older release needs allow_downgrade',
      );
      throw new UpgradeDowngradeError(
        `The package (${pkgVersion}) is older than the running version (${ctx.localVersion}): confirm the downgrade (allow_downgrade=1) to install it`,
        { package_version: pkgVersion, local_version: ctx.localVersion },
      );
    }
    if (!trusted || !result.firmware_valid || !result.manifest) {
      await rm(staging, { recursive: true, force: true });
      log.warn({ reason: result.reason }, 'upgrade package refused');
      return {
        status: 'Upgrade failed',
        signature_valid: result.signature_valid,
        firmware_valid: result.firmware_valid,
        message: result.reason ?? 'The package was refused',
        stdout: '',
        stderr: '',
      };
    }
    // The idle slot is replaced only by a complete, verified tree (one rename).
    await rm(dest, { recursive: true, force: true });
    await rename(staging, dest);
    fsyncDirSync(dirname(dest));
    // The slot's files reach the disk before the trial that boots them is recorded.
    await runCommand('sync', ['-f', dest], { timeoutMs: 60_000 }).catch((e: unknown) =>
      log.warn({ err: messageOf(e) }, 'sync of the new slot failed'),
    );
    if (!slotUsable(install, slot)) {
      await rm(dest, { recursive: true, force: true });
      return failed('The package has no server/dist/main.js or package.json');
    }
    const version = formatVersion(result.manifest.version) ?? result.manifest.version;
    const id = randomUUID();
    writeTrial(install, {
      id,
      from_slot: from,
      to_slot: slot,
      from_version: ctx.localVersion,
      to_version: version,
      save_config: opts.saveConfig,
      data_dir: resolve(ctx.dataDir),
      data_aside: null,
      attempts: 0,
      created_at: new Date().toISOString(),
    });
    log.warn(
      {
        id,
        version,
        slot,
        saveConfig: opts.saveConfig,
        skipVerify: opts.skipVerify,
        downgrade: opts.allowDowngrade === true,
        ms: Math.round(performance.now() - began),
      },
      'upgrade started: restarting into the new version',
    );
    return {
      status: 'Upgrade started',
      signature_valid: result.signature_valid,
      firmware_valid: true,
      stdout: `Installed ${version} into slot ${slot}; restarting`,
      stderr: '',
      id,
      version,
    };
  } catch (e) {
    if (e instanceof UpgradeDowngradeError) throw e;
    log.error({ err: e }, 'upgrade start failed');
    return failed(`The package could not be installed: ${messageOf(e)}`);
  }
}
