/**
 * The fingerbot (wire-protocol.md 5.7): one press at a time, the `fingerbot` event {exist}, and
 * firmware: a .zip whose manifest.json names `finger_robot.signed.bin` is verified on upload,
 * kept in `<data_dir>/fingerbot/firmware.zip`, and flashed by `upgrade`.
 */
import { EventEmitter } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FINGERBOT_FIRMWARE_IMAGE, type FingerbotEvent } from '@kvm/protocol';
import { BadRequestError, IsBusyError, ValidatorError } from '../../errors';
import type { FingerbotDriver } from '../../drivers/fingerbot/types';
import { atomicWriteFile } from '../../storage/atomic';
import { ZipError, zipEntries, zipRead, type ZipDirEntry } from '../../storage/zip';
import { ExclusiveRegion } from '../../sync/exclusive-region';
import { watchedStateProvider, type StateProvider } from '../../ws/state-registry';

export interface FirmwarePackage {
  image: Buffer;
  version: string;
}

/** The largest manifest.json read (nRF DFU manifests are a few hundred bytes). */
export const MANIFEST_MAX_BYTES = 64 * 1024;
/** How deep manifestFacts looks into the manifest's JSON (nRF DFU nests three levels). */
const MANIFEST_MAX_DEPTH = 16;

/** Finds `bin_file` values (nRF DFU manifests nest them) and a version anywhere in the JSON. */
function manifestFacts(value: unknown, facts = { bins: [] as string[], version: '' }, depth = 0) {
  if (value && typeof value === 'object' && depth < MANIFEST_MAX_DEPTH) {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'bin_file' && typeof v === 'string') facts.bins.push(v);
      else if (/^(version|fw_version|firmware_version)$/.test(k) && typeof v === 'string')
        facts.version ||= v;
      else manifestFacts(v, facts, depth + 1);
    }
  }
  return facts;
}

export class FingerbotFirmwareError extends BadRequestError {}

export class FingerbotIsBusyError extends IsBusyError {}

/**
 * Verifies a firmware package (storage/zip.ts bounds and checks every entry it reads); throws
 * FingerbotFirmwareError (400) naming what is wrong.
 */
export async function readFirmwarePackage(zip: Buffer): Promise<FirmwarePackage> {
  const bad = (why: string) =>
    new FingerbotFirmwareError(`Not a fingerbot firmware package: ${why}`);
  const read = async (entry: ZipDirEntry): Promise<Buffer> => {
    try {
      return await zipRead(zip, entry);
    } catch (err) {
      if (err instanceof ZipError) throw bad(err.message);
      throw err;
    }
  };
  let entries;
  try {
    entries = zipEntries(zip);
  } catch (err) {
    if (err instanceof ZipError) throw bad(err.message);
    throw err;
  }
  const manifestEntry = entries.find((e) => e.name === 'manifest.json');
  if (!manifestEntry) throw bad('no manifest.json');
  if (manifestEntry.size > MANIFEST_MAX_BYTES) {
    throw bad(`manifest.json is larger than ${MANIFEST_MAX_BYTES} bytes`);
  }
  const manifestText = (await read(manifestEntry)).toString('utf8');
  let manifest: unknown;
  try {
    manifest = JSON.parse(manifestText);
  } catch {
    throw bad('manifest.json is not JSON');
  }
  const facts = manifestFacts(manifest);
  if (!facts.bins.includes(FINGERBOT_FIRMWARE_IMAGE)) {
    throw bad(`the manifest does not list ${FINGERBOT_FIRMWARE_IMAGE}`);
  }
  const imageEntry = entries.find((e) => e.name === FINGERBOT_FIRMWARE_IMAGE);
  if (!imageEntry) throw bad(`${FINGERBOT_FIRMWARE_IMAGE} is missing`);
  const image = await read(imageEntry);
  if (image.length === 0) throw bad(`${FINGERBOT_FIRMWARE_IMAGE} is empty`);
  return { image, version: facts.version || `build-${image.length}` };
}

export class FingerbotService extends EventEmitter<{ state: [FingerbotEvent] }> {
  /** A press and a flash never overlap: the second is refused at once (409). */
  readonly region = new ExclusiveRegion(
    () => new FingerbotIsBusyError('The fingerbot is busy, please try again later'),
  );
  private readonly offDriver: () => void;
  private readonly packagePath: string;

  constructor(
    readonly driver: FingerbotDriver,
    dataDir: string,
  ) {
    super();
    this.packagePath = join(dataDir, 'fingerbot', 'firmware.zip');
    this.offDriver = driver.onState((s) => this.emit('state', { exist: s.exist }));
  }

  getState(): FingerbotEvent {
    return { exist: this.driver.getState().exist };
  }

  async click(pressMs: number, angle: 1 | 2): Promise<void> {
    await this.region.enter(() => this.driver.press(pressMs, angle));
  }

  battery(): Promise<number> {
    return this.driver.battery();
  }

  version(): Promise<string> {
    return this.driver.version();
  }

  /** Verifies and keeps a package; the robot is flashed by `upgrade`. */
  async upload(zip: Buffer): Promise<FirmwarePackage> {
    if (!this.driver.getState().exist) await this.driver.version(); // the driver's not-found error
    const pkg = await readFirmwarePackage(zip);
    await atomicWriteFile(this.packagePath, zip);
    return pkg;
  }

  async upgrade(): Promise<string> {
    let zip: Buffer;
    try {
      zip = await readFile(this.packagePath);
    } catch {
      throw new ValidatorError('No firmware package was uploaded');
    }
    const pkg = await readFirmwarePackage(zip);
    return this.region.enter(() => this.driver.upgrade(pkg));
  }

  /** The `fingerbot` event of `/api/ws`. */
  provider(): StateProvider {
    return watchedStateProvider('fingerbot', this);
  }

  dispose(): void {
    this.offDriver();
  }
}
