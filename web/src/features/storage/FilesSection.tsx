import { Button, Empty, Tag, Tooltip, Typography, theme } from 'antd';
import { DeleteOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import type { MsdMode } from '@kvm/protocol/enums';
import { readStorage, writeStorage } from '../../lib/storage';
import { useDateTimeFormat } from '../preferences/preferences-store';
import { formatBytes } from './format';
import { isIsoName, isoList, mountImage, type MsdImage } from './msd-store';
import { Section } from './Section';
import type { MsdActions } from './use-msd-action';

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
  const formatDate = useDateTimeFormat();
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
          {formatBytes(image.size)} · {formatDate(image.mod_ts * 1000)}
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
 * The files of the storage partition (only ISOs in image mounting mode), with mount and
 * delete, and the free space.
 */
export function FilesSection(props: {
  actions: MsdActions;
  images: readonly MsdImage[];
  mode: MsdMode;
  connected: boolean;
  mountedName: string | null;
  locked: boolean;
  free: number | null;
  /** The partition's size; no free-space note without it. */
  size: number | undefined;
  onRemove: (name: string) => void;
  /** SPEC 3 local key msd_mounted_tip: the tip shows after the first mount only. */
  onFirstMount: () => void;
}) {
  const { t } = useTranslation();
  const { actions, mode, connected } = props;
  const shown = mode === 'cdrom' ? isoList(props.images) : props.images;

  const mount = async (name: string) => {
    const mounted = await actions.run(`mount:${name}`, () => mountImage(name, mode), {
      // SPEC 8: mount failed.
      failure: t('storage.mountFailed'),
      detailInToast: false,
      success: t('storage.mounted'),
    });
    if (mounted && !readStorage(STORAGE_KEYS.msdMountedTip)) {
      writeStorage(STORAGE_KEYS.msdMountedTip, '1');
      props.onFirstMount();
    }
  };

  return (
    <Section
      title={t('storage.files')}
      extra={
        props.size !== undefined ? (
          <Typography.Text type="secondary" style={{ fontSize: 12 }}>
            {t('storage.freeOf', {
              free: formatBytes(props.free ?? 0),
              size: formatBytes(props.size),
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
            mounting={actions.busy === `mount:${image.name}`}
            inUse={image.name === props.mountedName}
            disabled={props.locked}
            onMount={() => void mount(image.name)}
            onRemove={() => props.onRemove(image.name)}
          />
        ))
      )}
    </Section>
  );
}
