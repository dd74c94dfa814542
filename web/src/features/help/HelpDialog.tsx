import { useEffect, useState } from 'react';
import { Button, Descriptions, Divider, Modal } from 'antd';
import { useTranslation } from 'react-i18next';
import { useMessage } from '../../components/notify';
import { errorMessage } from '../../lib/api';
import { fetchInfo, selectFirmwareVersion, useInfo } from '../device-info/info-store';
import UpgradeControl from '../upgrade/UpgradeControl';
import { exportLogs } from './help-api';
import SupportForm from './SupportForm';

/**
 * SPEC 2 help/about: firmware version, model and device id (the `info` event, else GET
 * /api/info), log export and the contact support form.
 */
export default function HelpDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const version = useInfo(selectFirmwareVersion);
  const model = useInfo((s) => s.system?.product?.model);
  const host = useInfo((s) => s.meta?.server?.host);
  const [exporting, setExporting] = useState(false);

  useEffect(() => {
    if (version === undefined) fetchInfo(['system', 'meta']).catch(() => undefined);
  }, [version]);

  const onExport = async () => {
    setExporting(true);
    try {
      await exportLogs();
    } catch (err) {
      void message.error(errorMessage(err, t('help.exportFailed')));
    } finally {
      setExporting(false);
    }
  };

  return (
    <Modal open title={t('help.title')} footer={null} onCancel={onClose} destroyOnHidden>
      <Descriptions column={1} size="small">
        <Descriptions.Item label={t('help.firmwareVersion')}>
          <span data-testid="about-version">{version ?? '—'}</span>
        </Descriptions.Item>
        <Descriptions.Item label={t('help.model')}>
          <span data-testid="about-model">{model ?? '—'}</span>
        </Descriptions.Item>
        <Descriptions.Item label={t('help.deviceId')}>
          <span data-testid="about-device-id">{host ?? '—'}</span>
        </Descriptions.Item>
      </Descriptions>
      <UpgradeControl />
      <Divider />
      <Button loading={exporting} onClick={onExport} data-testid="export-logs">
        {t('help.exportLogs')}
      </Button>
      <Divider />
      <SupportForm />
    </Modal>
  );
}
