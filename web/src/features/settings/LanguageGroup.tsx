import { Radio } from 'antd';
import { useTranslation } from 'react-i18next';
import { LANGUAGES, type Language } from '@kvm/protocol/enums';
import { applyLanguage, usePreferences } from '../preferences/preferences-store';
import { SettingsGroup } from './SettingsGroup';
import { useSaveConfig } from './use-save-config';

/** SPEC 2 settings: language (kept locally and in the server config `language`). */
export function LanguageGroup() {
  const { t } = useTranslation();
  const language = usePreferences((s) => s.language);
  const save = useSaveConfig();
  const change = (next: Language) => {
    applyLanguage(next);
    save({ language: next });
  };
  return (
    <SettingsGroup title={t('settings.language.title')} testId="settings-group-language">
      <Radio.Group value={language} onChange={(e) => change(e.target.value as Language)}>
        {LANGUAGES.map((lng) => (
          <Radio key={lng} value={lng} data-testid={`language-${lng}`}>
            {t(`settings.language.${lng}`)}
          </Radio>
        ))}
      </Radio.Group>
    </SettingsGroup>
  );
}
