import { useEffect, useRef, useSyncExternalStore } from 'react';
import { Button, Descriptions, Progress, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useMessage } from '../../components/notify';
import { formatBytes, formatDuration } from '../storage/format';
import {
  beginDownload,
  checkVersion,
  firmwareUploader,
  offeredBeta,
  offeredVersion,
  requestConfirm,
  setControlOpen,
  uploadFirmware,
  useUpgrade,
} from './upgrade-store';
import { percentOf, TransferError } from '../storage/upload';

/**
 * The upgrade control of the help/about dialog (SPEC 4): versions, release note, the online
 * download with its progress, the package upload with progress and speed, and the upgrade
 * button once a package is on the device. While it is open, a finished download waits here
 * instead of popping up the confirm dialog.
 */
export default function UpgradeControl() {
  const { t, i18n } = useTranslation();
  const message = useMessage();
  const compare = useUpgrade((s) => s.compare);
  const checking = useUpgrade((s) => s.checking);
  const download = useUpgrade((s) => s.download);
  const upload = useSyncExternalStore(firmwareUploader.subscribe, firmwareUploader.getSnapshot);
  const fileInput = useRef<HTMLInputElement>(null);
  const offered = offeredVersion(compare);
  const beta = offeredBeta(compare);

  useEffect(() => {
    setControlOpen(true);
    if (!compare) void checkVersion();
    return () => setControlOpen(false);
    // Once per opening.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const note = i18n.language.startsWith('zh')
    ? (compare?.release_note_cn ?? compare?.release_note)
    : compare?.release_note;
  const uploading = upload.phase === 'running';

  const onFile = (file: File | undefined) => {
    if (!file) return;
    uploadFirmware(file).catch((err: unknown) => {
      if (err instanceof TransferError && err.reason === 'cancelled') return;
      void message.error(t('upgrade.uploadFailed'));
    });
  };

  return (
    <Space direction="vertical" style={{ width: '100%' }} data-testid="upgrade-control">
      <Descriptions column={1} size="small">
        <Descriptions.Item label={t('upgrade.latestVersion')}>
          <span data-testid="upgrade-latest">
            {compare?.error ? t('upgrade.checkFailed') : (compare?.server_version ?? '—')}
          </span>
        </Descriptions.Item>
      </Descriptions>
      {compare && !offered && !compare.error && (
        <Typography.Text type="secondary" data-testid="upgrade-up-to-date">
          {t('upgrade.upToDate')}
        </Typography.Text>
      )}
      {offered && note && (
        <Typography.Paragraph style={{ whiteSpace: 'pre-wrap', maxHeight: 160, overflow: 'auto' }}>
          {note}
        </Typography.Paragraph>
      )}
      {download.status !== 'none' && (
        <Progress
          data-testid="upgrade-download-progress"
          percent={percentOf(download.size, download.total)}
          status={download.status === 'downloaded' ? 'success' : 'active'}
        />
      )}
      {uploading && (
        <div data-testid="upgrade-upload-progress">
          <Progress percent={upload.percent} status="active" />
          <Typography.Text type="secondary">
            {t('upgrade.uploadSpeed', {
              speed: formatBytes(upload.speed),
              remaining: upload.remainingS === null ? '—' : formatDuration(upload.remainingS),
            })}
          </Typography.Text>
        </div>
      )}
      <Space wrap>
        <Button loading={checking} onClick={() => void checkVersion()} data-testid="upgrade-check">
          {t('upgrade.check')}
        </Button>
        {offered && download.status === 'none' && (
          <Button
            type="primary"
            disabled={uploading}
            data-testid="upgrade-download"
            onClick={() =>
              beginDownload().catch(() => void message.error(t('upgrade.downloadFailed')))
            }
          >
            {t('upgrade.download')}
          </Button>
        )}
        {beta && download.status === 'none' && (
          <Button
            disabled={uploading}
            data-testid="upgrade-download-beta"
            onClick={() =>
              beginDownload(true).catch(() => void message.error(t('upgrade.downloadFailed')))
            }
          >
            {t('upgrade.downloadBeta', { version: beta })}
          </Button>
        )}
        {download.status === 'downloaded' && (
          <Button
            type="primary"
            danger
            data-testid="upgrade-now"
            onClick={() => requestConfirm('download')}
          >
            {t('upgrade.upgradeNow')}
          </Button>
        )}
        <Button
          disabled={uploading || download.status === 'downloading'}
          onClick={() => fileInput.current?.click()}
          data-testid="upgrade-upload"
        >
          {t('upgrade.uploadPackage')}
        </Button>
        {uploading && (
          <Button onClick={() => firmwareUploader.cancel()} data-testid="upgrade-upload-cancel">
            {t('common.cancel')}
          </Button>
        )}
      </Space>
      <input
        ref={fileInput}
        type="file"
        hidden
        data-testid="upgrade-file"
        onChange={(event) => {
          onFile(event.target.files?.[0]);
          event.target.value = '';
        }}
      />
    </Space>
  );
}
