import { Radio, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import type { ThemeMode } from '@kvm/protocol/enums';
import { applyThemeMode, usePreferences } from '../preferences/preferences-store';
import { SettingsGroup } from './SettingsGroup';
import { useSaveConfig } from './use-save-config';

/** SPEC 2 settings: color mode, theme_mode 0 light / 1 dark (SPEC 3). */
export function ColorModeGroup() {
  const { t } = useTranslation();
  const themeMode = usePreferences((s) => s.themeMode);
  const save = useSaveConfig();
  const change = (next: ThemeMode) => {
    applyThemeMode(next);
    save({ theme_mode: next });
  };
  return (
    <SettingsGroup title={t('settings.colorMode.title')} testId="settings-group-colormode">
      <Radio.Group value={themeMode} onChange={(e) => change(e.target.value as ThemeMode)}>
        <Radio value={0} data-testid="theme-light">
          {t('settings.colorMode.light')}
        </Radio>
        <Radio value={1} data-testid="theme-dark">
          {t('settings.colorMode.dark')}
        </Radio>
      </Radio.Group>
      <Typography.Paragraph type="secondary" style={{ margin: '8px 0 0' }}>
        {t('settings.colorMode.fullscreenDark')}
      </Typography.Paragraph>
    </SettingsGroup>
  );
}
