import { Divider, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { ChangePasswordForm } from './ChangePasswordForm';
import { SettingsGroup } from './SettingsGroup';
import { TwoFaSettings } from './TwoFaSettings';

/** SPEC 2 settings: security (admin password, two-factor authentication). */
export function SecurityGroup() {
  const { t } = useTranslation();
  return (
    <SettingsGroup title={t('settings.security.title')} testId="settings-group-security">
      <Typography.Text strong>{t('settings.security.changePassword')}</Typography.Text>
      <div style={{ marginTop: 8 }}>
        <ChangePasswordForm />
      </div>
      <Divider style={{ margin: '16px 0' }} />
      <Typography.Text strong>{t('settings.security.twofaTitle')}</Typography.Text>
      <div style={{ marginTop: 8 }}>
        <TwoFaSettings />
      </div>
    </SettingsGroup>
  );
}
