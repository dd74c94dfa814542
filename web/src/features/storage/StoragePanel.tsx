import {
  useEffect,
  useRef,
  useState,
  useSyncExternalStore,
  type ChangeEvent,
  type DragEvent,
  type ReactNode,
} from 'react';
import {
  Alert,
  Button,
  Empty,
  Input,
  Progress,
  Radio,
  Space,
  Spin,
  Switch,
  Tag,
  Tooltip,
  Typography,
  theme,
} from 'antd';
import {
  CloudDownloadOutlined,
  DeleteOutlined,
  DisconnectOutlined,
  LinkOutlined,
  UploadOutlined,
} from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { MSD_MODES, type MsdMode } from '@kvm/protocol/enums';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { ApiError } from '../../lib/api';
import { readStorage, writeStorage } from '../../lib/storage';
import { formatBytes, formatDuration } from './format';
import {
  driveMode,
  formatPartition,
  freeSpace,
  imageList,
  isIsoName,
  isoList,
  loadMsd,
  mountImage,
  removeImage,
  setMsdEnabled,
  setPartitionConnected,
  unmountImage,
  useMsd,
  type MsdImage,
} from './msd-store';
import { checkImageUrl, msdDownloader } from './remote-download';
import {
  checkUpload,
  isDirectory,
  msdUploader,
  TRANSFER_FAILURE_TEXT,
  TransferError,
  UPLOAD_REFUSAL_TEXT,
  uploadMsdImage,
  type EntryLike,
  type TransferSnapshot,
} from './upload';

const MODE_TEXT: Record<MsdMode, { label: I18nKey; hint: I18nKey; upload: I18nKey }> = {
  flash: {
    label: 'storage.modeFlash',
    hint: 'storage.modeFlashHint',
    upload: 'storage.upload.hintFlash',
  },
  cdrom: {
    label: 'storage.modeCdrom',
    hint: 'storage.modeCdromHint',
    upload: 'storage.upload.hintCdrom',
  },
};

type Confirm =
  { kind: 'enable'; enabled: boolean } | { kind: 'remove'; name: string } | { kind: 'format' };

/** The SPEC text, then the server's reason when it gave one. */
function withDetail(text: string, err: unknown): string {
  const detail =
    err instanceof ApiError || err instanceof TransferError ? err.error_msg : undefined;
  return detail ? `${text}: ${detail}` : text;
}

function Section({
  title,
  extra,
  children,
}: {
  title: ReactNode;
  extra?: ReactNode;
  children: ReactNode;
}) {
  return (
    <section style={{ marginTop: 16 }}>
      <div style={{ display: 'flex', alignItems: 'center', marginBottom: 8 }}>
        <Typography.Text strong style={{ flex: 1 }}>
          {title}
        </Typography.Text>
        {extra}
      </div>
      {children}
    </section>
  );
}

/** Progress of an upload or URL download: bar, percent, speed, time left, cancel. */
function TransferView(props: {
  snapshot: TransferSnapshot;
  testId: string;
  cancelTestId: string;
  onCancel: () => void;
  onDismiss: () => void;
}) {
  const { t } = useTranslation();
  const { snapshot } = props;
  if (snapshot.phase === 'idle') return null;
  const running = snapshot.phase === 'running';
  const status =
    snapshot.phase === 'done' ? 'success' : running ? 'active' : ('exception' as const);
  const facts = [`${snapshot.percent}%`];
  if (running && snapshot.speed > 0) {
    facts.push(t('storage.upload.speed', { speed: formatBytes(snapshot.speed) }));
  }
  if (running && snapshot.remainingS !== null) {
    facts.push(t('storage.upload.remaining', { time: formatDuration(snapshot.remainingS) }));
  }
  return (
    <div
      data-testid={props.testId}
      data-phase={snapshot.phase}
      data-percent={snapshot.percent}
      style={{ marginTop: 8 }}
    >
      <Typography.Text ellipsis style={{ display: 'block' }} title={snapshot.name}>
        {snapshot.name}
      </Typography.Text>
      <Progress percent={snapshot.percent} status={status} showInfo={false} size="small" />
      <div style={{ display: 'flex', alignItems: 'center', gap: 8 }}>
        <Typography.Text type="secondary" style={{ flex: 1, fontSize: 12 }}>
          {facts.join(' · ')}
        </Typography.Text>
        {running ? (
          <Button size="small" onClick={props.onCancel} data-testid={props.cancelTestId}>
            {t('storage.upload.cancel')}
          </Button>
        ) : (
          <Button size="small" type="text" onClick={props.onDismiss}>
            {t('storage.upload.dismiss')}
          </Button>
        )}
      </div>
    </div>
  );
}

function ImageRow(props: {
  image: MsdImage;
  canMount: boolean;
  mounting: boolean;
  inUse: boolean;
  disabled: boolean;
  onMount: () => void;
  onRemove: () => void;
}) {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const { image } = props;
  return (
    <div
      data-testid={`msd-image-${image.name}`}
      data-complete={image.complete ? 'true' : 'false'}
      style={{
        display: 'flex',
        alignItems: 'center',
        gap: 8,
        padding: '6px 0',
        borderBottom: `1px solid ${token.colorBorderSecondary}`,
      }}
    >
      <div style={{ flex: 1, minWidth: 0 }}>
        <Typography.Text ellipsis style={{ display: 'block' }} title={image.name}>
          {image.name}
        </Typography.Text>
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {formatBytes(image.size)} · {new Date(image.mod_ts * 1000).toLocaleString()}
        </Typography.Text>
        <div>
          {props.inUse ? (
            <Tag color="processing">{t('storage.inUse')}</Tag>
          ) : image.complete ? (
            <Tag color="success">{t('storage.complete')}</Tag>
          ) : (
            <Tag color="warning">{t('storage.incomplete')}</Tag>
          )}
        </div>
      </div>
      {props.canMount && (
        <Button
          size="small"
          type="primary"
          loading={props.mounting}
          disabled={props.disabled || !image.complete}
          onClick={props.onMount}
          data-testid={`msd-mount-${image.name}`}
        >
          {t('storage.mount')}
        </Button>
      )}
      <Tooltip title={t('storage.remove')}>
        <Button
          size="small"
          type="text"
          danger
          icon={<DeleteOutlined />}
          aria-label={t('storage.remove')}
          disabled={props.disabled || props.inUse}
          onClick={props.onRemove}
          data-testid={`msd-remove-${image.name}`}
        />
      </Tooltip>
    </div>
  );
}

/**
 * SPEC 2/4 virtual media: on/off (the device restarts), mode (file sharing = read-write USB
 * drive, image mounting = CD-ROM), the files of the storage partition with mount and delete,
 * upload (button or drop) and download from a URL with progress and cancel, and the storage
 * partition as a second USB drive, with format.
 */
export default function StoragePanel() {
  const { t } = useTranslation();
  const message = useMessage();
  const { token } = theme.useToken();
  const state = useMsd((s) => s.state);
  const restarting = useMsd((s) => s.restarting);
  const upload = useSyncExternalStore(msdUploader.subscribe, msdUploader.getSnapshot);
  const download = useSyncExternalStore(msdDownloader.subscribe, msdDownloader.getSnapshot);
  const [chosenMode, setChosenMode] = useState<MsdMode | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [confirm, setConfirm] = useState<Confirm | null>(null);
  const [action, setAction] = useState<string | null>(null);
  const [showTip, setShowTip] = useState(false);
  const [url, setUrl] = useState('');
  const [urlInvalid, setUrlInvalid] = useState(false);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);

  useEffect(() => {
    void loadMsd();
  }, []);

  const connected = state?.drive?.connected === true;
  // The drive's own type while something is mounted; the user's choice otherwise.
  const mode: MsdMode = connected ? driveMode(state) : (chosenMode ?? driveMode(state));
  const images = imageList(state);
  const shown = mode === 'cdrom' ? isoList(images) : images;
  const mountedName = connected ? (state?.drive?.image?.name ?? null) : null;
  const partitionConnected = state?.drive_partition?.connected === true;
  const transferring = upload.phase === 'running' || download.phase === 'running';
  const locked = state?.busy === true || action !== null;
  const free = freeSpace(state);
  const part = state?.storage?.parts?.[''];

  const fail = (text: string, err?: unknown) => {
    const full = withDetail(text, err);
    setError(full);
    void message.error(full);
  };

  const run = async (name: string, work: () => Promise<void>) => {
    setAction(name);
    try {
      await work();
    } finally {
      setAction(null);
      void loadMsd();
    }
  };

  const transferFailed = (err: unknown) => {
    if (!(err instanceof TransferError)) {
      fail(t('storage.upload.failed'), err);
      return;
    }
    const text = t(TRANSFER_FAILURE_TEXT[err.reason]);
    if (err.reason === 'cancelled') {
      void message.info(text);
    } else if (err.reason === 'failed') {
      fail(text, err);
    } else {
      fail(text);
    }
  };

  const startUpload = async (file: File, entry?: EntryLike | null) => {
    setError(null);
    if (transferring) {
      void message.warning(t('storage.upload.running'));
      return;
    }
    const refusal = checkUpload(file, {
      mode,
      free,
      existing: new Set(images.map((i) => i.name)),
      isDirectory: await isDirectory(file, entry),
    });
    if (refusal) {
      fail(t(UPLOAD_REFUSAL_TEXT[refusal]));
      return;
    }
    try {
      const result = await uploadMsdImage(msdUploader, file);
      void message.success(t('storage.upload.done', { name: result.image?.name ?? file.name }));
    } catch (err) {
      transferFailed(err);
    } finally {
      void loadMsd();
    }
  };

  const onPick = (event: ChangeEvent<HTMLInputElement>) => {
    const file = event.target.files?.[0];
    event.target.value = ''; // The same file may be picked again.
    if (file) void startUpload(file);
  };

  const onDrop = (event: DragEvent<HTMLDivElement>) => {
    event.preventDefault();
    setDragging(false);
    // The entry must be read during the event: the item list is emptied afterwards.
    const item = event.dataTransfer.items?.[0];
    const entry = item && 'webkitGetAsEntry' in item ? item.webkitGetAsEntry() : null;
    const file = event.dataTransfer.files?.[0];
    if (file) void startUpload(file, entry);
  };

  const startDownload = async () => {
    setError(null);
    if (!checkImageUrl(url)) {
      setUrlInvalid(true);
      fail(t('storage.download.invalidUrl'));
      return;
    }
    setUrlInvalid(false);
    if (transferring) {
      void message.warning(t('storage.upload.running'));
      return;
    }
    try {
      const result = await msdDownloader.start(url);
      setUrl('');
      void message.success(t('storage.download.done', { name: result.image.name }));
    } catch (err) {
      transferFailed(err);
    } finally {
      void loadMsd();
    }
  };

  const mount = (name: string) =>
    run(`mount:${name}`, async () => {
      try {
        await mountImage(name, mode);
      } catch (err) {
        // SPEC 8: mount failed.
        const tip = t('storage.mountFailed');
        void message.error(tip);
        setError(withDetail(tip, err));
        return;
      }
      setError(null);
      void message.success(t('storage.mounted'));
      // SPEC 3 local key msd_mounted_tip: the tip shows after the first mount only.
      if (!readStorage(STORAGE_KEYS.msdMountedTip)) {
        writeStorage(STORAGE_KEYS.msdMountedTip, '1');
        setShowTip(true);
      }
    });

  const unmount = () =>
    run('unmount', async () => {
      try {
        await unmountImage();
        setError(null);
        void message.success(t('storage.unmounted'));
      } catch (err) {
        fail(t('storage.actionFailed'), err);
      }
    });

  const togglePartition = () =>
    run('partition', async () => {
      try {
        await setPartitionConnected(!partitionConnected);
        setError(null);
        void message.success(
          t(partitionConnected ? 'storage.partition.disconnected' : 'storage.partition.connected'),
        );
      } catch (err) {
        fail(t('storage.actionFailed'), err);
      }
    });

  /** Runs with the dialog's OK button loading; the dialog closes when done. */
  const confirmed = async () => {
    const current = confirm;
    if (!current) return;
    if (current.kind === 'enable') {
      await run('enable', async () => {
        try {
          await setMsdEnabled(current.enabled);
          setError(null);
        } catch (err) {
          fail(t('storage.actionFailed'), err);
        }
      });
    } else if (current.kind === 'remove') {
      await run(`remove:${current.name}`, async () => {
        try {
          await removeImage(current.name);
          void message.success(t('storage.removed'));
        } catch (err) {
          fail(t('storage.removeFailed'), err);
        }
      });
    } else {
      await run('format', async () => {
        try {
          await formatPartition();
          setError(null);
          void message.success(t('storage.partition.formatted'));
        } catch (err) {
          // SPEC 8: format failed.
          fail(t('storage.partition.formatFailed'), err);
        }
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

  const enabled = state?.enabled === true;
  const online = state?.online === true;

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
        {!online && <Alert type="warning" showIcon title={t('storage.offline')} />}
        {state.busy && <Alert type="info" showIcon title={t('storage.busy')} />}

        <Section title={t('storage.mode')}>
          <Radio.Group
            value={mode}
            disabled={connected}
            onChange={(e) => setChosenMode(e.target.value as MsdMode)}
            optionType="button"
            buttonStyle="solid"
            data-testid="msd-mode"
            data-value={mode}
          >
            {MSD_MODES.map((m) => (
              <Radio.Button key={m} value={m} data-testid={`msd-mode-${m}`}>
                {t(MODE_TEXT[m].label)}
              </Radio.Button>
            ))}
          </Radio.Group>
          <Typography.Paragraph type="secondary" style={{ margin: '4px 0 0', fontSize: 12 }}>
            {t(connected ? 'storage.modeLocked' : MODE_TEXT[mode].hint)}
          </Typography.Paragraph>
        </Section>

        <Section title={t('storage.drive')}>
          {connected ? (
            <div
              data-testid="msd-drive"
              data-image={mountedName ?? ''}
              style={{ display: 'flex', alignItems: 'center', gap: 8 }}
            >
              <div style={{ flex: 1, minWidth: 0 }}>
                <Typography.Text ellipsis style={{ display: 'block' }}>
                  {mountedName ?? '—'}
                </Typography.Text>
                <Tag>{t(mode === 'cdrom' ? 'storage.driveCdrom' : 'storage.driveFlash')}</Tag>
              </div>
              <Button
                size="small"
                icon={<DisconnectOutlined />}
                loading={action === 'unmount'}
                disabled={locked}
                onClick={() => void unmount()}
                data-testid="msd-unmount"
              >
                {t('storage.unmount')}
              </Button>
            </div>
          ) : (
            <Typography.Text type="secondary">{t('storage.noDrive')}</Typography.Text>
          )}
          {showTip && (
            <div data-testid="msd-mounted-tip" style={{ marginTop: 8 }}>
              <Alert
                type="success"
                showIcon
                title={t('storage.mountedTipTitle')}
                description={t('storage.mountedTip')}
                closable={{ onClose: () => setShowTip(false) }}
              />
            </div>
          )}
        </Section>

        <Section title={t('storage.upload.title')}>
          <div
            data-testid="msd-upload-drop"
            onDragOver={(e) => {
              e.preventDefault();
              if (!dragging) setDragging(true);
            }}
            onDragLeave={() => setDragging(false)}
            onDrop={onDrop}
            style={{
              border: `1px dashed ${dragging ? token.colorPrimary : token.colorBorder}`,
              borderRadius: token.borderRadius,
              background: dragging ? token.colorPrimaryBg : token.colorFillQuaternary,
              padding: 12,
              textAlign: 'center',
            }}
          >
            <input
              ref={fileInput}
              type="file"
              hidden
              accept={mode === 'cdrom' ? '.iso,.img,.bin' : undefined}
              onChange={onPick}
              data-testid="msd-upload-input"
            />
            <Space orientation="vertical" size={4}>
              <Button
                icon={<UploadOutlined />}
                disabled={transferring}
                onClick={() => fileInput.current?.click()}
                data-testid="msd-upload-button"
              >
                {t('storage.upload.choose')}
              </Button>
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                {t('storage.upload.drop')} · {t(MODE_TEXT[mode].upload)}
              </Typography.Text>
            </Space>
          </div>
          <TransferView
            snapshot={upload}
            testId="msd-upload-progress"
            cancelTestId="msd-upload-cancel"
            onCancel={() => msdUploader.cancel()}
            onDismiss={() => msdUploader.clear()}
          />
        </Section>

        <Section title={t('storage.download.title')}>
          <Space.Compact style={{ width: '100%' }}>
            <Input
              value={url}
              status={urlInvalid ? 'error' : undefined}
              placeholder={t('storage.download.placeholder')}
              onChange={(e) => {
                setUrl(e.target.value);
                setUrlInvalid(false);
              }}
              onPressEnter={() => void startDownload()}
              data-testid="msd-url"
              spellCheck={false}
            />
            <Button
              icon={<CloudDownloadOutlined />}
              disabled={transferring}
              onClick={() => void startDownload()}
              data-testid="msd-url-download"
            >
              {t('storage.download.start')}
            </Button>
          </Space.Compact>
          <TransferView
            snapshot={download}
            testId="msd-url-progress"
            cancelTestId="msd-url-cancel"
            onCancel={() => msdDownloader.cancel()}
            onDismiss={() => msdDownloader.clear()}
          />
        </Section>

        <Section
          title={t('storage.files')}
          extra={
            part ? (
              <Typography.Text type="secondary" style={{ fontSize: 12 }}>
                {t('storage.freeOf', {
                  free: formatBytes(free ?? 0),
                  size: formatBytes(part.size),
                })}
              </Typography.Text>
            ) : null
          }
        >
          {shown.length === 0 ? (
            <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t('storage.noFiles')} />
          ) : (
            shown.map((image) => (
              <ImageRow
                key={image.name}
                image={image}
                canMount={!connected && (mode === 'flash' || isIsoName(image.name))}
                mounting={action === `mount:${image.name}`}
                inUse={image.name === mountedName}
                disabled={locked}
                onMount={() => void mount(image.name)}
                onRemove={() => setConfirm({ kind: 'remove', name: image.name })}
              />
            ))
          )}
        </Section>

        <Section title={t('storage.partition.title')}>
          <Typography.Paragraph type="secondary" style={{ fontSize: 12, marginBottom: 8 }}>
            {t('storage.partition.hint')}
          </Typography.Paragraph>
          <Space wrap>
            <Button
              icon={partitionConnected ? <DisconnectOutlined /> : <LinkOutlined />}
              loading={action === 'partition'}
              disabled={locked}
              onClick={() => void togglePartition()}
              data-testid="msd-partition-connect"
              data-connected={partitionConnected ? 'true' : 'false'}
            >
              {t(partitionConnected ? 'storage.partition.disconnect' : 'storage.partition.connect')}
            </Button>
            <Tooltip
              title={
                connected || partitionConnected ? t('storage.partition.formatLocked') : undefined
              }
            >
              <Button
                danger
                loading={action === 'format'}
                disabled={locked || connected || partitionConnected || transferring}
                onClick={() => setConfirm({ kind: 'format' })}
                data-testid="msd-partition-format"
              >
                {t('storage.partition.format')}
              </Button>
            </Tooltip>
          </Space>
        </Section>
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
          loading={action === 'enable'}
          disabled={restarting || state === null || locked || transferring}
          onChange={(checked) => setConfirm({ kind: 'enable', enabled: checked })}
          data-testid="msd-enabled"
        />
      </div>
      {body}
      {error && (
        <Alert
          type="error"
          showIcon
          style={{ marginTop: 16 }}
          closable={{ onClose: () => setError(null) }}
          title={<span data-testid="msd-error">{error}</span>}
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
