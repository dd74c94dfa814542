/**
 * Groups (admin): user groups (members, the device groups they see) and device groups (their
 * devices). A user sees the devices of every device group linked to one of its user groups.
 */
import { useState, type FormEvent } from 'react';
import { useLoader } from '../lib/loader';
import { Button, Input, Space } from 'antd';
import type { FleetGroups, FleetUserRow } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api, asList } from '../lib/api';
import { showError } from '../lib/session';
import { Confirm } from '../components/Confirm';
import { DeviceGroupCard } from './DeviceGroupCard';
import { UserGroupCard } from './UserGroupCard';

function NewGroup({ kind, onMade }: { kind: 'users' | 'devices'; onMade: () => void }) {
  const t = useT();
  const [name, setName] = useState('');
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    try {
      await api.post(`groups/${kind}`, { name: name.trim() });
      setName('');
      onMade();
    } catch (e) {
      showError(e);
    }
  };
  return (
    <form className="fleet-bar" onSubmit={(e) => void submit(e)}>
      <Input
        style={{ maxWidth: 240 }}
        maxLength={64}
        placeholder={t('groups.name')}
        aria-label={t('groups.name')}
        value={name}
        onChange={(e) => setName(e.target.value)}
        data-testid={`group-new-${kind}-name`}
      />
      <Button
        htmlType="submit"
        type="primary"
        disabled={!name.trim()}
        data-testid={`group-new-${kind}`}
      >
        {kind === 'users' ? t('groups.newUserGroup') : t('groups.newDeviceGroup')}
      </Button>
    </form>
  );
}

export default function GroupsPage() {
  const t = useT();
  const { data, reload: load } = useLoader(
    async () => {
      const [groups, users] = await Promise.all([
        api.get<FleetGroups>('groups'),
        api.get<unknown>('users', { limit: 200 }),
      ]);
      return { groups, users: asList<FleetUserRow>(users, 'users') };
    },
    { groups: { user_groups: [], device_groups: [] } as FleetGroups, users: [] as FleetUserRow[] },
  );
  const { groups, users } = data;
  const [remove, setRemove] = useState<{
    kind: 'users' | 'devices';
    id: string;
    name: string;
  } | null>(null);

  const patch = async (kind: 'users' | 'devices', id: string, body: object) => {
    try {
      await api.patch(`groups/${kind}/${encodeURIComponent(id)}`, body);
      await load();
    } catch (e) {
      showError(e);
    }
  };

  return (
    <section data-testid="view-groups">
      <h2>{t('groups.userGroups')}</h2>
      <NewGroup kind="users" onMade={() => void load()} />
      <Space direction="vertical" style={{ width: '100%' }}>
        {groups.user_groups.map((g) => (
          <UserGroupCard
            key={g.id}
            group={g}
            users={users}
            deviceGroups={groups.device_groups}
            patch={(body) => patch('users', g.id, body)}
            onDelete={() => setRemove({ kind: 'users', id: g.id, name: g.name })}
          />
        ))}
      </Space>
      <h2>{t('groups.deviceGroups')}</h2>
      <NewGroup kind="devices" onMade={() => void load()} />
      <Space direction="vertical" style={{ width: '100%' }}>
        {groups.device_groups.map((g) => (
          <DeviceGroupCard
            key={g.id}
            group={g}
            patch={(body) => patch('devices', g.id, body)}
            onDelete={() => setRemove({ kind: 'devices', id: g.id, name: g.name })}
          />
        ))}
      </Space>
      <Confirm
        open={remove !== null}
        danger
        title={t('groups.deleteTitle', { name: remove?.name ?? '' })}
        onCancel={() => setRemove(null)}
        onConfirm={async () => {
          if (!remove) return;
          await api.del(`groups/${remove.kind}/${encodeURIComponent(remove.id)}`);
          setRemove(null);
          await load();
        }}
      />
    </section>
  );
}
