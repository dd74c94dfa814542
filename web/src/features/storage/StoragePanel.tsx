import { useEffect, useState, useSyncExternalStore, type ReactNode } from 'react';
import { Alert, Spin, Switch, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import type { MsdMode } from '@kvm/protocol/enums';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { DownloadSection } from './DownloadSection';
import { DriveSection } from './DriveSection';
import { FilesSection } from './FilesSection';
import { ModeSection } from './ModeSection';
import {
  driveMode,
  formatPartition,
  freeSpace,
  imageList,
  loadMsd,
  removeImage,
  setMsdEnabled,
  useMsd,
} from './msd-store';
import { PartitionSection } from './PartitionSection';
import { msdDownloader } from './remote-download';
import { msdUploader } from './upload';
import { UploadSection } from './UploadSection';
import { useMsdAction } from './use-msd-action';

type Confirm =
  { kind: 'enable'; enabled: boolean } | { kind: 'remove'; name: string } | { kind: 'format' };

/**
 * SPEC 2/4 virtual media: on/off (the device restarts), mode (file sharing = read-write USB
 * drive, image mounting = CD-ROM), the files of the storage partition with mount and delete,
 * upload (button or drop) and download from a URL with progress and cancel, and the storage
 * partition as a second USB drive, with format. One component per section; the actions share
 * `useMsdAction` (busy, error, toasts, reload).
 */
export default function StoragePanel() {
  const { t } = useTranslation();
  const actions = useMsdAction();
  const state = useMsd((s) => s.state);
  const restarting = useMsd((s) => s.restarting);
  const upload = useSyncExternalStore(msdUploader.subscribe, msdUploader.getSnapshot);
  const download = useSyncExternalStore(msdDownloader.subscribe, msdDownloader.getSnapshot);
  const [chosenMode, setChosenMode] = useState<MsdMode | null>(null);
  const [confirm, setConfirm] = useState<Confirm | null>(null);
  const [showTip, setShowTip] = useState(false);

  useEffect(() => {
    void loadMsd();
  }, []);

  const connected = state?.drive?.connected === true;
  // The drive's own type while something is mounted; the user's choice otherwise.
  const mode: MsdMode = connected ? driveMode(state) : (chosenMode ?? driveMode(state));
  const images = imageList(state);
  const mountedName = connected ? (state?.drive?.image?.name ?? null) : null;
  const partitionConnected = state?.drive_partition?.connected === true;
  const transferring = upload.phase === 'running' || download.phase === 'running';
  const locked = state?.busy === true || actions.busy !== null;
  const free = freeSpace(state);
  const enabled = state?.enabled === true;

  /** Runs with the dialog's OK button loading; the dialog closes when done. */
  const confirmed = async () => {
    const current = confirm;
    if (!current) return;
    if (current.kind === 'enable') {
      await actions.run('enable', () => setMsdEnabled(current.enabled), {
        failure: t('storage.actionFailed'),
      });
    } else if (current.kind === 'remove') {
      await actions.run(`remove:${current.name}`, () => removeImage(current.name), {
        failure: t('storage.removeFailed'),
        success: t('storage.removed'),
      });
    } else {
      await actions.run('format', formatPartition, {
        // SPEC 8: format failed.
        failure: t('storage.partition.formatFailed'),
        success: t('storage.partition.formatted'),
      });
    }
    setConfirm(null);
  };

  const confirmText =
    confirm?.kind === 'enable'
      ? t(confirm.enabled ? 'storage.enableConfirm' : 'storage.disableConfirm')
      : confirm?.kind === 'remove'
        ? t('storage.removeConfirm', { name: confirm.name })
        : confirm?.kind === 'format'
          ? t('storage.partition.formatConfirm')
          : null;

  let body: ReactNode;
  if (restarting) {
    body = (
      <Alert
        type="info"
        showIcon
        icon={<Spin size="small" />}
        title={<span data-testid="msd-restarting">{t('storage.restarting')}</span>}
      />
    );
  } else if (state === null) {
    body = (
      <div style={{ textAlign: 'center', padding: 24 }}>
        <Spin />
      </div>
    );
  } else if (!enabled) {
    body = <Alert type="info" showIcon title={t('storage.disabled')} />;
  } else {
    body = (
      <>
        {state.online !== true && <Alert type="warning" showIcon title={t('storage.offline')} />}
        {state.busy && <Alert type="info" showIcon title={t('storage.busy')} />}
        <ModeSection mode={mode} connected={connected} onChange={setChosenMode} />
        <DriveSection
          actions={actions}
          connected={connected}
          mountedName={mountedName}
          mode={mode}
          locked={locked}
          showTip={showTip}
          onCloseTip={() => setShowTip(false)}
        />
        <UploadSection
          actions={actions}
          mode={mode}
          images={images}
          free={free}
          transferring={transferring}
        />
        <DownloadSection actions={actions} transferring={transferring} />
        <FilesSection
          actions={actions}
          images={images}
          mode={mode}
          connected={connected}
          mountedName={mountedName}
          locked={locked}
          free={free}
          size={state.storage?.parts?.['']?.size}
          onRemove={(name) => setConfirm({ kind: 'remove', name })}
          onFirstMount={() => setShowTip(true)}
        />
        <PartitionSection
          actions={actions}
          partitionConnected={partitionConnected}
          driveConnected={connected}
          locked={locked}
          transferring={transferring}
          onFormat={() => setConfirm({ kind: 'format' })}
        />
      </>
    );
  }

  return (
    <div
      data-testid="storage-panel"
      data-state={restarting ? 'restarting' : enabled ? 'on' : 'off'}
    >
      <div style={{ display: 'flex', alignItems: 'center', gap: 8, marginBottom: 12 }}>
        <Typography.Text strong style={{ flex: 1 }}>
          {t('storage.enabled')}
        </Typography.Text>
        <Switch
          checked={enabled}
          loading={actions.busy === 'enable'}
          disabled={restarting || state === null || locked || transferring}
          onChange={(checked) => setConfirm({ kind: 'enable', enabled: checked })}
          data-testid="msd-enabled"
        />
      </div>
      {body}
      {actions.error && (
        <Alert
          type="error"
          showIcon
          style={{ marginTop: 16 }}
          closable={{ onClose: actions.clearError }}
          title={<span data-testid="msd-error">{actions.error}</span>}
        />
      )}
      <ConfirmDialog
        open={confirm !== null}
        onConfirm={confirmed}
        onCancel={() => setConfirm(null)}
      >
        {confirmText}
      </ConfirmDialog>
    </div>
  );
}
