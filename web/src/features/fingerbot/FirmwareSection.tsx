import { useRef, useState, useSyncExternalStore, type ChangeEvent } from 'react';
import { Button, Divider, Progress, Space } from 'antd';
import { UploadOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import { UploadController } from '../storage/upload';
import { upgradeFingerbot } from './fingerbot-store';
import { useFingerbotCall } from './use-fingerbot-call';

/** The firmware upload: kept while the panel is closed (SPEC 7: no timeout, with progress). */
const firmwareUploader = new UploadController();

/** SPEC 9: upload a firmware package (.zip), then push it to the fingerbot (up to 480 s). */
export function FirmwareSection({ onUpgraded }: { onUpgraded: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const send = useFingerbotCall();
  const upgrade = useFingerbotCall();
  const [confirmUpgrade, setConfirmUpgrade] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);
  const upload = useSyncExternalStore(firmwareUploader.subscribe, firmwareUploader.getSnapshot);

  const pickFirmware = async (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    event.target.value = ''; // The same file may be picked again after a failure.
    if (!file) return;
    if (!file.name.toLowerCase().endsWith('.zip')) {
      void message.error(t('fingerbot.wrongType'));
      return;
    }
    const form = new FormData();
    form.append('file', file, file.name);
    await send.run(
      () => firmwareUploader.send('/fingerbot/upload', form, { name: file.name, total: file.size }),
      { success: t('fingerbot.uploaded'), failure: t('fingerbot.uploadFailed') },
    );
  };

  const startUpgrade = async () => {
    setConfirmUpgrade(false);
    const upgraded = await upgrade.run(
      async () => {
        await upgradeFingerbot();
        firmwareUploader.clear();
      },
      { success: t('fingerbot.upgraded'), failure: t('fingerbot.upgradeFailed') },
    );
    if (upgraded) onUpgraded();
  };

  const uploading = upload.phase === 'running';
  // The package on the device is the one this console uploaded last (kept while closed).
  const uploaded = upload.phase === 'done';
  return (
    <>
      <Divider titlePlacement="start" plain>
        {t('fingerbot.firmware')}
      </Divider>
      <Space orientation="vertical" style={{ width: '100%' }}>
        <input
          ref={fileInput}
          type="file"
          accept=".zip,application/zip"
          hidden
          onChange={(e) => void pickFirmware(e)}
          data-testid="fingerbot-upload-input"
        />
        <Button
          icon={<UploadOutlined />}
          block
          disabled={uploading || upgrade.busy}
          onClick={() => fileInput.current?.click()}
        >
          {t('fingerbot.upload')}
        </Button>
        {upload.phase !== 'idle' && (
          <Progress
            percent={upload.percent}
            status={
              upload.phase === 'failed' || upload.phase === 'cancelled'
                ? 'exception'
                : upload.phase === 'done'
                  ? 'success'
                  : 'active'
            }
            data-testid="fingerbot-upload-progress"
          />
        )}
        <Button
          type="primary"
          danger
          block
          disabled={!uploaded || uploading}
          loading={upgrade.busy}
          onClick={() => setConfirmUpgrade(true)}
          data-testid="fingerbot-upgrade"
        >
          {upgrade.busy ? t('fingerbot.upgrading') : t('fingerbot.upgrade')}
        </Button>
      </Space>
      <ConfirmDialog
        open={confirmUpgrade}
        okText={t('fingerbot.upgrade')}
        onConfirm={() => void startUpgrade()}
        onCancel={() => setConfirmUpgrade(false)}
      >
        {t('fingerbot.upgradeConfirm')}
      </ConfirmDialog>
    </>
  );
}
