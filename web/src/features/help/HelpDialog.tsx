import { useEffect, useState } from 'react';
import { Button, Descriptions, Divider, Modal } from 'antd';
import { useTranslation } from 'react-i18next';
import { formatVersion } from '@kvm/protocol/upgrade';
import { useMessage } from '../../components/notify';
import { errorMessage } from '../../lib/api';
import { fetchInfo, selectFirmwareVersion, useInfo } from '../device-info/info-store';
import UpgradeControl from '../upgrade/UpgradeControl';
import { exportLogs } from './help-api';
import SupportForm from './SupportForm';

/**
 * SPEC 2 help/about: the running firmware, model and device id (the `info` event, else GET
 * /api/info), the upgrade control, log export and the contact support form. Versions are
 * shown in SPEC 4's spelling (`V0.2.0`) everywhere: the running one here, the channel's
 * latest in the upgrade control. The body scrolls inside the window (an 800 px high one too).
 */
/** The dialog sits this far from the window's top (antd's default is 100 px). */
const ABOUT_TOP_PX = 24;
/** Its body scrolls beyond this: the window less the top and bottom gaps and the title bar. */
const ABOUT_BODY_MAX_HEIGHT = `calc(100vh - ${ABOUT_TOP_PX * 2 + 96}px)`;

export default function HelpDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const version = useInfo(selectFirmwareVersion);
  const model = useInfo((s) => s.system?.product?.model);
  const deviceId = useInfo((s) => s.system?.product?.device_id);
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
    <Modal
      open
      title={t('help.title')}
      footer={null}
      onCancel={onClose}
      destroyOnHidden
      style={{ top: ABOUT_TOP_PX }}
      styles={{ body: { maxHeight: ABOUT_BODY_MAX_HEIGHT, overflowY: 'auto' } }}
    >
      <Descriptions column={1} size="small">
        <Descriptions.Item label={t('help.firmwareVersion')}>
          <span data-testid="about-version">
            {version === undefined ? '—' : (formatVersion(version) ?? version)}
          </span>
        </Descriptions.Item>
        <Descriptions.Item label={t('help.model')}>
          <span data-testid="about-model">{model ?? '—'}</span>
        </Descriptions.Item>
        <Descriptions.Item label={t('help.deviceId')}>
          <span data-testid="about-device-id">{deviceId || '—'}</span>
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
