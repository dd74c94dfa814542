import { afterEach, describe, expect, it, vi } from 'vitest';
import { useEffect } from 'react';
import { USER_CONFIG_DEFAULTS } from '@kvm/protocol/settings';
import { NotifyProvider } from '../../components/notify';
import { i18n, initI18n } from '../../i18n';
import en from '../../i18n/en.json';
import zh from '../../i18n/zh.json';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { render, type Rendered } from '../../test/render';
import { resetConfigForTests, useConfig } from '../config/config-store';
import { useSaveConfig } from './use-save-config';

function Saver() {
  const save = useSaveConfig();
  useEffect(() => save({ show_cursor: false }), [save]);
  return null;
}

describe("useSaveConfig: SPEC 8 'sync failed'", () => {
  let view: Rendered | undefined;
  afterEach(async () => {
    view?.unmount();
    view = undefined;
    resetConfigForTests();
    vi.unstubAllGlobals();
    await i18n.changeLanguage('en');
  });

  for (const [lang, text] of [
    ['en', en.common.syncFailed],
    ['zh', zh.common.syncFailed],
  ] as const) {
    it(`says '${text}' (${lang}) when the settings cannot be written to the device`, async () => {
      initI18n();
      await i18n.changeLanguage(lang);
      useConfig.setState({ config: { ...USER_CONFIG_DEFAULTS }, status: 'ready' });
      stubFetch({
        '/api/system/set_config': () => envelope(503, { error: 'UnavailableError', error_msg: '' }),
      });
      view = await render(
        <NotifyProvider>
          <Saver />
        </NotifyProvider>,
      );
      await vi.waitFor(() => expect(document.body.textContent).toContain(text));
      expect(document.body.textContent).not.toContain(en.common.settingFailed);
    });
  }
});
