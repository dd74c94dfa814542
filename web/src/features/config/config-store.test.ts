import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { USER_CONFIG_DEFAULTS, type UserConfig } from '@kvm/protocol/settings';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { usePreferences } from '../preferences/preferences-store';
import {
  ConfigValidationError,
  loadConfig,
  resetConfigForTests,
  saveConfig,
  useConfig,
} from './config-store';

function configServer(initial: Record<string, unknown>) {
  let stored = initial;
  return stubFetch({
    '/api/system/get_config': () => envelope(200, { success: true, config: stored }),
    '/api/system/set_config': (req: RecordedRequest) => {
      stored = JSON.parse(req.body ?? '{}') as Record<string, unknown>;
      return envelope(200, { success: true, config: stored });
    },
  });
}

describe('config store', () => {
  beforeEach(() => {
    localStorage.clear();
    resetConfigForTests();
    usePreferences.setState({ language: 'en', themeMode: 0 });
  });
  afterEach(() => vi.unstubAllGlobals());

  it('loads, fills defaults, keeps unknown keys and applies language and theme', async () => {
    configServer({ language: 'zh', theme_mode: 1, other_client_key: 'x' });
    const config = await loadConfig();
    expect(config).toMatchObject({ ...USER_CONFIG_DEFAULTS, language: 'zh', theme_mode: 1 });
    expect(config?.other_client_key).toBe('x');
    expect(useConfig.getState().status).toBe('ready');
    expect(usePreferences.getState()).toEqual({
      language: 'zh',
      formatLocale: 'zh-CN',
      themeMode: 1,
    });
    expect(localStorage.getItem(STORAGE_KEYS.language)).toBe('zh');
    expect(localStorage.getItem(STORAGE_KEYS.themeMode)).toBe('1');
  });

  it('writes the WHOLE object as JSON', async () => {
    const { requests } = configServer({ keymap: 'de', other_client_key: 'x' });
    await loadConfig();
    await saveConfig({ theme_mode: 1 });
    const post = requests.find((r) => r.path === '/api/system/set_config');
    expect(post?.headers['content-type']).toBe('application/json');
    const body = JSON.parse(post?.body ?? '{}') as UserConfig;
    expect(body).toMatchObject({ ...USER_CONFIG_DEFAULTS, keymap: 'de', theme_mode: 1 });
    expect(body.other_client_key).toBe('x');
  });

  it('reads the config first rather than writing defaults over it', async () => {
    const { requests } = configServer({ keymap: 'fr' });
    await saveConfig({ language: 'zh' });
    expect(requests.map((r) => r.path)).toEqual([
      '/api/system/get_config',
      '/api/system/set_config',
    ]);
    expect(JSON.parse(requests[1]?.body ?? '{}')).toMatchObject({ keymap: 'fr', language: 'zh' });
  });

  it('refuses an invalid value before sending anything', async () => {
    const { requests } = configServer({});
    await loadConfig();
    const sent = requests.length;
    const err = await saveConfig({ mouse_polling: 5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigValidationError);
    expect((err as ConfigValidationError).issues[0]?.path).toBe('mouse_polling');
    expect(requests).toHaveLength(sent);
  });

  it('queues writes so that two quick changes both arrive', async () => {
    const { requests } = configServer({});
    await loadConfig();
    await Promise.all([saveConfig({ language: 'zh' }), saveConfig({ theme_mode: 1 })]);
    const posts = requests.filter((r) => r.path === '/api/system/set_config');
    expect(JSON.parse(posts.at(-1)?.body ?? '{}')).toMatchObject({ language: 'zh', theme_mode: 1 });
    expect(useConfig.getState().config).toMatchObject({ language: 'zh', theme_mode: 1 });
  });

  it('does not let a slow load undo a change the user made meanwhile', async () => {
    configServer({ language: 'en', theme_mode: 0 });
    const load = loadConfig();
    usePreferences.setState({ themeMode: 1 });
    const save = saveConfig({ theme_mode: 1 });
    await Promise.all([load, save]);
    expect(usePreferences.getState().themeMode).toBe(1);
    expect(useConfig.getState().config?.theme_mode).toBe(1);
  });

  it('rejects a failed write for the caller to show', async () => {
    stubFetch({
      '/api/system/get_config': () => envelope(200, { success: true, config: {} }),
      '/api/system/set_config': () =>
        envelope(400, { error: 'ValidatorError', error_msg: 'shortcuts.0.keys: bad' }),
    });
    await loadConfig();
    await expect(saveConfig({ language: 'zh' })).rejects.toMatchObject({
      status: 400,
      error_msg: 'shortcuts.0.keys: bad',
    });
  });
});
