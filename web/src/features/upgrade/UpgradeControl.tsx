import { useEffect, useRef, useSyncExternalStore } from 'react';
import { Alert, Button, Descriptions, Progress, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useMessage } from '../../components/notify';
import { formatBytes, formatDuration } from '../storage/format';
import {
  acknowledgeOutcome,
  beginDownload,
  canInstall,
  checkStatus,
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
import { rollbackReasonText } from './rollback-reason';

/** The last upgrade's outcome, shown by the control until it closes once after it happened. */
function LastOutcome() {
  const { t } = useTranslation();
  const shown = useUpgrade((s) => s.outcome);
  if (!shown) return null;
  const names = { from: shown.from_version, to: shown.to_version };
  const reason = rollbackReasonText(shown, t);
  let text: string;
  if (shown.result === 'success') text = t('upgrade.outcomeSuccess', names);
  else if (reason) text = t('upgrade.outcomeFailed', { ...names, reason });
  else text = t('upgrade.outcomeFailedNoReason', names);
  return (
    <Alert
      data-testid="upgrade-outcome"
      data-result={shown.result}
      type={shown.result === 'success' ? 'success' : 'error'}
      showIcon
      title={text}
    />
  );
}

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
  const installable = useUpgrade(canInstall);
  const offered = installable ? offeredVersion(compare) : null;
  const beta = installable ? offeredBeta(compare) : null;

  useEffect(() => {
    setControlOpen(true);
    if (!compare) void checkVersion();
    void checkStatus();
    return () => {
      setControlOpen(false);
      acknowledgeOutcome();
    };
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
      <LastOutcome />
      {!installable && (
        <Alert
          data-testid="upgrade-cannot-install"
          type="warning"
          showIcon
          title={t('upgrade.cannotInstall')}
        />
      )}
      <Descriptions column={1} size="small">
        <Descriptions.Item label={t('upgrade.latestVersion')}>
          <span data-testid="upgrade-latest">
            {compare?.error ? t('upgrade.checkFailed') : (compare?.server_version ?? '—')}
          </span>
        </Descriptions.Item>
      </Descriptions>
      {installable && compare && !offered && !compare.error && (
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
        {installable && download.status === 'downloaded' && (
          <Button
            type="primary"
            danger
            data-testid="upgrade-now"
            onClick={() => requestConfirm('download')}
          >
            {t('upgrade.upgradeNow')}
          </Button>
        )}
        {installable && (
          <Button
            disabled={uploading || download.status === 'downloading'}
            onClick={() => fileInput.current?.click()}
            data-testid="upgrade-upload"
          >
            {t('upgrade.uploadPackage')}
          </Button>
        )}
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
