import { Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { CollapsibleGroup } from '../toolbox/CollapsibleGroup';
import { AtxGroup } from './AtxGroup';
import { FingerbotGroup } from './FingerbotGroup';
import { SwitchGroup } from './SwitchGroup';

/**
 * SPEC 2 left panel "external devices" (GL: fingerbot, ATX board; here also a KVM switch where
 * one is attached). Each group is the existing feature (the fingerbot panel, the power menu's
 * control) or the device's own API, and says when the device has no such part. A lazy chunk of
 * its own (MainLayout).
 */
export default function ExternalDevicesPanel() {
  const { t } = useTranslation();
  return (
    <div data-testid="external-panel">
      <Typography.Title level={4} style={{ margin: 0, padding: '12px 16px 0' }}>
        {t('external.title')}
      </Typography.Title>
      <CollapsibleGroup title={t('power.menu')} testId="external-atx">
        <AtxGroup />
      </CollapsibleGroup>
      <CollapsibleGroup title={t('fingerbot.title')} testId="external-fingerbot">
        <FingerbotGroup />
      </CollapsibleGroup>
      <CollapsibleGroup title={t('external.switch')} testId="external-switch">
        <SwitchGroup />
      </CollapsibleGroup>
    </div>
  );
}
