/** A device's name in the list, renamed inline (`PATCH devices/:id` {name}) by its owner or an admin. */
import { useState } from 'react';
import { Button, Input, Space } from 'antd';
import type { FleetDeviceRow } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { showError } from '../lib/session';

export function DeviceName(props: {
  device: FleetDeviceRow;
  editable: boolean;
  onRenamed: () => void;
}) {
  const { device, editable, onRenamed } = props;
  const t = useT();
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(device.name);
  if (!editing) {
    return (
      <Space>
        <span data-testid="device-name">{device.name}</span>
        {editable && (
          <Button
            size="small"
            type="link"
            aria-label={t('devices.renameName', { name: device.name })}
            onClick={() => {
              setName(device.name);
              setEditing(true);
            }}
            data-testid="device-rename"
          >
            {t('devices.rename')}
          </Button>
        )}
      </Space>
    );
  }
  const save = async () => {
    try {
      await api.patch(`devices/${encodeURIComponent(device.id)}`, { name: name.trim() });
      setEditing(false);
      onRenamed();
    } catch (e) {
      showError(e);
    }
  };
  return (
    <Space.Compact>
      <Input
        size="small"
        autoFocus
        maxLength={64}
        aria-label={t('devices.name')}
        value={name}
        onChange={(e) => setName(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') setEditing(false);
        }}
        onPressEnter={() => void save()}
        data-testid="device-rename-input"
      />
      <Button
        size="small"
        type="primary"
        onClick={() => void save()}
        data-testid="device-rename-save"
      >
        {t('common.save')}
      </Button>
    </Space.Compact>
  );
}
