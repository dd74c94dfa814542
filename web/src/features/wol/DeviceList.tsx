import { Button, Empty, Space, Spin, Tooltip, Typography } from 'antd';
import { DeleteOutlined, EditOutlined, PoweroffOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import type { WolDevice } from '@kvm/protocol/wol';

interface DeviceListProps {
  devices: WolDevice[];
  loading: boolean;
  /** The MAC being woken, or null. */
  waking: string | null;
  onWake(device: WolDevice): void;
  onRename(device: WolDevice): void;
  onRemove(device: WolDevice): void;
}

/** The saved devices, each with wake, rename and remove. */
export function DeviceList({ devices, loading, ...actions }: DeviceListProps) {
  const { t } = useTranslation();
  if (loading && devices.length === 0) {
    return (
      <div style={{ textAlign: 'center', padding: 16 }}>
        <Spin />
      </div>
    );
  }
  if (devices.length === 0) {
    return <Empty image={Empty.PRESENTED_IMAGE_SIMPLE} description={t('wol.empty')} />;
  }
  return devices.map((device) => <DeviceRow key={device.mac} device={device} {...actions} />);
}

function DeviceRow({
  device,
  waking,
  onWake,
  onRename,
  onRemove,
}: Omit<DeviceListProps, 'devices' | 'loading'> & { device: WolDevice }) {
  const { t } = useTranslation();
  return (
    <div
      data-testid={`wol-row-${device.mac}`}
      style={{
        display: 'flex',
        alignItems: 'center',
        gap: 8,
        padding: '8px 0',
        borderBottom: '1px solid var(--ant-color-border-secondary, #f0f0f0)',
      }}
    >
      <div style={{ flex: 1, minWidth: 0 }}>
        <Typography.Text strong ellipsis style={{ display: 'block' }}>
          {device.name}
        </Typography.Text>
        <Typography.Text type="secondary" style={{ fontFamily: 'monospace' }}>
          {device.mac}
        </Typography.Text>
      </div>
      <Space size={4}>
        <Button
          type="primary"
          size="small"
          icon={<PoweroffOutlined />}
          loading={waking === device.mac}
          onClick={() => onWake(device)}
          data-testid={`wol-wake-${device.mac}`}
        >
          {t('wol.wake')}
        </Button>
        <Tooltip title={t('wol.rename')}>
          <Button
            size="small"
            type="text"
            icon={<EditOutlined />}
            aria-label={t('wol.rename')}
            onClick={() => onRename(device)}
            data-testid={`wol-rename-${device.mac}`}
          />
        </Tooltip>
        <Tooltip title={t('wol.remove')}>
          <Button
            size="small"
            type="text"
            danger
            icon={<DeleteOutlined />}
            aria-label={t('wol.remove')}
            onClick={() => onRemove(device)}
            data-testid={`wol-remove-${device.mac}`}
          />
        </Tooltip>
      </Space>
    </div>
  );
}
