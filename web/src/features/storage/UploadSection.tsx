import { useRef, useState, useSyncExternalStore, type ChangeEvent, type DragEvent } from 'react';
import { Button, Space, Typography, theme } from 'antd';
import { UploadOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import type { MsdMode } from '@kvm/protocol/enums';
import { useMessage } from '../../components/notify';
import { MODE_TEXT } from './mode-text';
import { loadMsd, type MsdImage } from './msd-store';
import { Section } from './Section';
import { TransferView } from './TransferView';
import {
  checkUpload,
  isDirectory,
  msdUploader,
  UPLOAD_REFUSAL_TEXT,
  uploadMsdImage,
  type EntryLike,
} from './upload';
import type { MsdActions } from './use-msd-action';

/** Upload by button or drop, checked first (type, duplicate, free space), with progress. */
export function UploadSection(props: {
  actions: MsdActions;
  mode: MsdMode;
  images: readonly MsdImage[];
  free: number | null;
  /** An upload or a URL download runs: one transfer at a time. */
  transferring: boolean;
}) {
  const { t } = useTranslation();
  const message = useMessage();
  const { token } = theme.useToken();
  const { actions, mode } = props;
  const upload = useSyncExternalStore(msdUploader.subscribe, msdUploader.getSnapshot);
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);

  const startUpload = async (file: File, entry?: EntryLike | null) => {
    actions.clearError();
    if (props.transferring) {
      void message.warning(t('storage.upload.running'));
      return;
    }
    const refusal = checkUpload(file, {
      mode,
      free: props.free,
      existing: new Set(props.images.map((i) => i.name)),
      isDirectory: await isDirectory(file, entry),
    });
    if (refusal) {
      actions.fail(t(UPLOAD_REFUSAL_TEXT[refusal]));
      return;
    }
    try {
      const result = await uploadMsdImage(msdUploader, file);
      void message.success(t('storage.upload.done', { name: result.image?.name ?? file.name }));
    } catch (err) {
      actions.failTransfer(err);
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

  return (
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
            disabled={props.transferring}
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
  );
}
