/** One device group: its devices (`GET devices?group=`), add by search, remove. */
import { useEffect, useState } from 'react';
import { Button, Input, Space } from 'antd';
import type {
  FleetDeviceGroup,
  FleetDeviceGroupPatch,
  FleetDevicePage,
  FleetDeviceRow,
} from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { useLoader } from '../lib/loader';
import { GroupCard, RemovableTag } from './GroupCard';

export function DeviceGroupCard(props: {
  group: FleetDeviceGroup;
  patch: (body: FleetDeviceGroupPatch) => Promise<void>;
  onDelete: () => void;
}) {
  const { group, patch, onDelete } = props;
  const t = useT();
  // read again when the group's count changes (a device added or removed)
  const { data: devices } = useLoader(
    async () =>
      (await api.get<FleetDevicePage>('devices', { group: group.id, limit: 200 })).devices,
    [] as FleetDeviceRow[],
    `${group.id}:${group.device_count}`,
  );
  const [q, setQ] = useState('');
  const [query, setQuery] = useState('');
  const { data: found } = useLoader(
    async () =>
      query ? (await api.get<FleetDevicePage>('devices', { q: query, limit: 20 })).devices : [],
    [] as FleetDeviceRow[],
    query,
  );
  // the search asks the fleet once typing pauses
  useEffect(() => {
    const timer = setTimeout(() => setQuery(q.trim()), 300);
    return () => clearTimeout(timer);
  }, [q]);

  const inGroup = new Set(devices.map((d) => d.id));
  return (
    <GroupCard
      title={`${group.name} (${group.device_count})`}
      groupId={group.id}
      testId="device-group"
      onDelete={onDelete}
    >
      <p>
        {devices.map((d) => (
          <RemovableTag
            key={d.id}
            label={d.name}
            testId="group-device"
            deviceId={d.id}
            onRemove={() => void patch({ remove_devices: [d.id] })}
          />
        ))}
      </p>
      <Input
        style={{ maxWidth: 260 }}
        placeholder={t('groups.findDevice')}
        aria-label={t('groups.findDevice')}
        value={q}
        onChange={(e) => setQ(e.target.value)}
        data-testid="group-find-device"
      />
      <Space wrap style={{ marginTop: 6 }}>
        {found
          .filter((d) => !inGroup.has(d.id))
          .map((d) => (
            <Button
              key={d.id}
              size="small"
              onClick={() => void patch({ add_devices: [d.id] })}
              data-testid="group-add-device"
              data-device-id={d.id}
            >
              + {d.name}
            </Button>
          ))}
      </Space>
    </GroupCard>
  );
}
