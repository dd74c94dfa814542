/**
 * The console's per-user settings blob (SPEC 3, wire-protocol 5.2): read and written whole,
 * known keys checked, unknown keys kept, every write atomic.
 */
import { join } from 'node:path';
import { checkUserConfig, normalizeUserConfig, type UserConfig } from '@kvm/protocol';
import { ValidatorError } from '../errors';
import { JsonFile } from '../storage/json-store';

export class SettingsStore {
  private constructor(
    private config: UserConfig,
    private readonly file: JsonFile<UserConfig>,
  ) {}

  static async open(dataDir: string): Promise<SettingsStore> {
    const file = new JsonFile<UserConfig>(join(dataDir, 'user-config.json'), normalizeUserConfig);
    let config: UserConfig;
    try {
      config = await file.load();
    } catch {
      // A corrupt blob (written by hand) is replaced by defaults; nothing else depends on it.
      config = normalizeUserConfig(undefined);
    }
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
