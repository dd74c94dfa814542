/**
 * Server-stored settings (SPEC 3 "Settings stored per user on the server"): read from
 * GET /api/system/get_config after login, written whole with POST /api/system/set_config.
 * Every write is checked with the shared schema first, so the server never sees a bad value.
 */
import type { ConfigResult } from '@kvm/protocol/api';
import {
  checkUserConfig,
  normalizeUserConfig,
  type ConfigIssue,
  type UserConfig,
} from '@kvm/protocol/settings';
import { api } from '../../lib/api';
import { applyLanguage, applyThemeMode } from '../preferences/preferences-store';
import { useConfig } from './config-state';

export { useConfig, type ConfigState } from './config-state';

export class ConfigValidationError extends Error {
  override readonly name = 'ConfigValidationError';
  readonly issues: ConfigIssue[];

  constructor(issues: ConfigIssue[]) {
    super(issues.map((i) => `${i.path || '(config)'}: ${i.message}`).join('; '));
    this.issues = issues;
  }
}

let loading: Promise<UserConfig | null> | null = null;
/** Bumped by every local change, so a load that was slower than the user does not undo it. */
let localEdits = 0;

/**
 * Loads the config (once at a time) and applies the settings this browser shows right away:
 * language and color mode follow the server copy after login (SPEC 3).
 */
export function loadConfig(options: { apply?: boolean } = {}): Promise<UserConfig | null> {
  const apply = options.apply ?? true;
  loading ??= (async () => {
    const editsAtStart = localEdits;
    useConfig.setState({ status: 'loading' });
    let config: UserConfig;
    try {
      const result = await api.get<Partial<ConfigResult>>('/system/get_config');
      // A GL device answers {} for a config never written: normalise fills the defaults.
      config = normalizeUserConfig(result.config);
    } catch {
      useConfig.setState({ status: 'error' });
      return null;
    } finally {
      loading = null;
    }
    useConfig.setState({ config, status: 'ready' });
    if (apply && localEdits === editsAtStart) {
      applyLanguage(config.language);
      applyThemeMode(config.theme_mode);
    }
    return config;
  })();
  return loading;
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * Changes some keys and writes the WHOLE object (the server stores what it gets). Writes are
 * queued, each built on the latest state, so two quick changes do not undo each other. The
 * store updates at once; a failed write leaves the local value and rejects for the caller's toast.
 */
export async function saveConfig(patch: Partial<UserConfig>): Promise<UserConfig> {
  localEdits += 1;
  // Never write defaults over a config we have not read: unknown keys of other clients would
  // be lost. (Not applied: the caller has just applied its own change locally.)
  const base = useConfig.getState().config ?? (await loadConfig({ apply: false }));
  if (!base) throw new Error('The settings could not be read from the device');
  const next = { ...base, ...patch } as UserConfig;
  const issues = checkUserConfig(next);
  if (issues.length > 0) throw new ConfigValidationError(issues);
  useConfig.setState({ config: next });

  const write = queue.then(async () => {
    const latest = useConfig.getState().config ?? next;
    const result = await api.post<ConfigResult>('/system/set_config', { json: latest });
    const stored = normalizeUserConfig(result.config);
    // Keep later local edits that are still queued: only adopt the echo if nothing changed.
    if (useConfig.getState().config === latest) useConfig.setState({ config: stored });
    return stored;
  });
  queue = write.catch(() => undefined);
  return write;
}

/** For tests. */
export function resetConfigForTests(): void {
  loading = null;
  queue = Promise.resolve();
  useConfig.setState({ config: null, status: 'idle' });
}
