/** One user group: its members (add, remove) and the device groups it sees (checkboxes). */
import { useState } from 'react';
import { Button, Space } from 'antd';
import type {
  FleetDeviceGroup,
  FleetUserGroup,
  FleetUserGroupPatch,
  FleetUserRow,
} from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { GroupCard, RemovableTag } from './GroupCard';

export function UserGroupCard(props: {
  group: FleetUserGroup;
  users: FleetUserRow[];
  deviceGroups: FleetDeviceGroup[];
  patch: (body: FleetUserGroupPatch) => Promise<void>;
  onDelete: () => void;
}) {
  const { group, users, deviceGroups, patch, onDelete } = props;
  const t = useT();
  const [add, setAdd] = useState('');
  // a link's checkbox follows the click at once; the group's answer replaces it
  const [pending, setPending] = useState<Record<string, boolean>>({});
  const members = new Set(group.members.map((m) => m.id));
  const linked = new Set(group.device_groups);
  return (
    <GroupCard title={group.name} groupId={group.id} testId="user-group" onDelete={onDelete}>
      <p>
        {t('groups.members')}:{' '}
        {group.members.map((m) => (
          <RemovableTag
            key={m.id}
            label={m.username}
            testId="group-member"
            onRemove={() => void patch({ remove_members: [m.id] })}
          />
        ))}
      </p>
      <Space>
        <select
          className="fleet-select"
          aria-label={t('groups.addMember')}
          value={add}
          onChange={(e) => setAdd(e.target.value)}
          data-testid="group-add-member"
        >
          <option value="">{t('groups.addMember')}</option>
          {users
            .filter((u) => !members.has(u.id))
            .map((u) => (
              <option key={u.id} value={u.id}>
                {u.username}
              </option>
            ))}
        </select>
        <Button
          size="small"
          disabled={!add}
          onClick={() => {
            void patch({ add_members: [add] }).then(() => setAdd(''));
          }}
          data-testid="group-add-member-submit"
        >
          {t('common.add')}
        </Button>
      </Space>
      <p>{t('groups.sees')}:</p>
      <Space wrap>
        {deviceGroups.map((d) => (
          <label key={d.id} className="fleet-check">
            <input
              type="checkbox"
              checked={pending[d.id] ?? linked.has(d.id)}
              onChange={(e) => {
                const on = e.target.checked;
                const next = new Set(linked);
                if (on) next.add(d.id);
                else next.delete(d.id);
                setPending((p) => ({ ...p, [d.id]: on }));
                void patch({ device_groups: [...next] }).finally(() =>
                  setPending(({ [d.id]: _done, ...rest }) => rest),
                );
              }}
              data-testid="group-link"
              data-device-group={d.id}
            />
            {d.name}
          </label>
        ))}
      </Space>
    </GroupCard>
  );
}
