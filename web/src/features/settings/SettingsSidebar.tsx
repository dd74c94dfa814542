import { Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { ColorModeGroup } from './ColorModeGroup';
import { KeyboardGroup } from './KeyboardGroup';
import { LanguageGroup } from './LanguageGroup';
import { MouseGroup } from './MouseGroup';
import { SecurityGroup } from './SecurityGroup';
import { VideoGroup } from './VideoGroup';

/**
 * SPEC 2 settings sidebar. Each group arrives with the issue that owns it; today: video,
 * security, language and color mode.
 */
export default function SettingsSidebar() {
  const { t } = useTranslation();
  return (
    <div data-testid="settings-sidebar">
      <Typography.Title level={4} style={{ margin: 0, padding: '12px 16px 0' }}>
        {t('settings.title')}
      </Typography.Title>
      <VideoGroup />
      <KeyboardGroup />
      <MouseGroup />
      <SecurityGroup />
      <LanguageGroup />
      <ColorModeGroup />
    </div>
  );
}
