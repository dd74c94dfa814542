/**
 * The console's per-user settings blob (SPEC 3, wire-protocol 5.2): read and written whole,
 * known keys checked, unknown keys kept, every write atomic.
 *
 * A stored blob that cannot be used never bricks the settings routes (issue 9, item 13): bad
 * content (not JSON, over the size or depth bound) is moved aside as `user-config.json.bad-<time>`
 * and the defaults are served, with a warning; an I/O or permission error says nothing about
 * the content, so the file is left where it is, the defaults are served and an error is logged
 * (a save then fails with an honest 500 until the data folder is fixed; a restart after the fix
 * reads the file again).
 */
import { join } from 'node:path';
import {
  checkUserConfig,
  normalizeUserConfig,
  USER_CONFIG_MAX_BYTES,
  userConfigBoundsIssue,
  type UserConfig,
} from '@kvm/protocol';
import { SILENT_LOGGER, type Logger } from '../log';
import { ValidatorError } from '../errors';
import { JsonFile } from '../storage/json-store';

/** On disk the blob is indented: room for that around the 64 KiB of compact JSON. */
const FILE_MAX_BYTES = 16 * USER_CONFIG_MAX_BYTES;

function parseStored(raw: unknown): UserConfig {
  const bounds = raw === undefined ? null : userConfigBoundsIssue(raw);
  if (bounds) throw new Error(bounds.message);
  return normalizeUserConfig(raw);
}

export class SettingsStore {
  private constructor(
    private config: UserConfig,
    private readonly file: JsonFile<UserConfig>,
  ) {}

  static async open(dataDir: string, log: Logger = SILENT_LOGGER): Promise<SettingsStore> {
    const file = new JsonFile<UserConfig>(join(dataDir, 'user-config.json'), parseStored, {
      maxBytes: FILE_MAX_BYTES,
    });
    const config = await file.loadOrDefaults(
      () => normalizeUserConfig(undefined),
      log,
      'settings file',
    );
    return new SettingsStore(config, file);
  }

  get(): UserConfig {
    return structuredClone(this.config);
  }

  async set(input: unknown): Promise<UserConfig> {
    const issues = checkUserConfig(input);
    if (issues.length > 0) {
      const first = issues[0]!;
      const where = first.path ? `The argument '${first.path}' is not valid: ` : '';
      throw new ValidatorError(`${where}${first.message}`);
    }
    const next = normalizeUserConfig(input);
    await this.file.save(next);
    this.config = next;
    return this.get();
  }
}
