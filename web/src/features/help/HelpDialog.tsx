import { useEffect } from 'react';
import { Descriptions, Modal } from 'antd';
import { useTranslation } from 'react-i18next';
import { fetchInfo, selectFirmwareVersion, useInfo } from '../device-info/info-store';
import UpgradeControl from '../upgrade/UpgradeControl';

/**
 * SPEC 2 help/about: the firmware version (from the `info` event, else GET /api/info).
 * Contact support and log export arrive with their issues.
 */
export default function HelpDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const version = useInfo(selectFirmwareVersion);

  useEffect(() => {
    if (version === undefined) fetchInfo(['system']).catch(() => undefined);
  }, [version]);

  return (
    <Modal open title={t('help.title')} footer={null} onCancel={onClose} destroyOnHidden>
      <Descriptions column={1} size="small">
        <Descriptions.Item label={t('help.firmwareVersion')}>
          <span data-testid="about-version">{version ?? '—'}</span>
        </Descriptions.Item>
      </Descriptions>
      <UpgradeControl />
    </Modal>
  );
}
