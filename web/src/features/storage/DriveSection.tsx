import { Alert, Button, Tag, Typography } from 'antd';
import { DisconnectOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import type { MsdMode } from '@kvm/protocol/enums';
import { unmountImage } from './msd-store';
import { Section } from './Section';
import type { MsdActions } from './use-msd-action';

/** The drive the host sees: the mounted image with unmount, and the one-time mounted tip. */
export function DriveSection(props: {
  actions: MsdActions;
  connected: boolean;
  mountedName: string | null;
  mode: MsdMode;
  locked: boolean;
  showTip: boolean;
  onCloseTip: () => void;
}) {
  const { t } = useTranslation();
  const { actions, mountedName } = props;

  const unmount = () =>
    actions.run('unmount', unmountImage, {
      failure: t('storage.actionFailed'),
      success: t('storage.unmounted'),
    });

  return (
    <Section title={t('storage.drive')}>
      {props.connected ? (
        <div
          data-testid="msd-drive"
          data-image={mountedName ?? ''}
          style={{ display: 'flex', alignItems: 'center', gap: 8 }}
        >
          <div style={{ flex: 1, minWidth: 0 }}>
            <Typography.Text ellipsis style={{ display: 'block' }}>
              {mountedName ?? '—'}
            </Typography.Text>
            <Tag>{t(props.mode === 'cdrom' ? 'storage.driveCdrom' : 'storage.driveFlash')}</Tag>
          </div>
          <Button
            size="small"
            icon={<DisconnectOutlined />}
            loading={actions.busy === 'unmount'}
            disabled={props.locked}
            onClick={() => void unmount()}
            data-testid="msd-unmount"
          >
            {t('storage.unmount')}
          </Button>
        </div>
      ) : (
        <Typography.Text type="secondary">{t('storage.noDrive')}</Typography.Text>
      )}
      {props.showTip && (
        <div data-testid="msd-mounted-tip" style={{ marginTop: 8 }}>
          <Alert
            type="success"
            showIcon
            title={t('storage.mountedTipTitle')}
            description={t('storage.mountedTip')}
            closable={{ onClose: props.onCloseTip }}
          />
        </div>
      )}
    </Section>
  );
}
