/**
 * Users (admin): create (no e-mail code), role, disable, reset the password, delete. The fleet
 * keeps its last admin (409, shown).
 */
import { useState, type FormEvent } from 'react';
import { useLoader } from '../lib/loader';
import { Button, Input, Space, Table, Tag } from 'antd';
import type { FleetRole, FleetUserCreate, FleetUserRow } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api, asList } from '../lib/api';
import { fmtTime } from '../lib/format';
import { showError, showStatus } from '../lib/session';
import { Confirm } from '../components/Confirm';

function CreateUser({ onMade }: { onMade: () => void }) {
  const t = useT();
  const empty: FleetUserCreate = { username: '', email: '', password: '', role: 'user' };
  const [f, setF] = useState(empty);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    try {
      await api.post('users', f);
      showStatus(t('users.created', { name: f.username }));
      setF(empty);
      onMade();
    } catch (e) {
      showError(e);
    }
  };
  return (
    <form className="fleet-bar" onSubmit={(e) => void submit(e)} aria-label={t('users.create')}>
      <Input
        style={{ maxWidth: 160 }}
        placeholder={t('field.username')}
        aria-label={t('field.username')}
        value={f.username}
        onChange={(e) => setF({ ...f, username: e.target.value })}
        data-testid="user-new-username"
      />
      <Input
        style={{ maxWidth: 200 }}
        placeholder={t('field.email')}
        aria-label={t('field.email')}
        value={f.email}
        onChange={(e) => setF({ ...f, email: e.target.value })}
        data-testid="user-new-email"
      />
      <Input
        style={{ maxWidth: 140 }}
        type="password"
        placeholder={t('field.password')}
        aria-label={t('field.password')}
        value={f.password}
        onChange={(e) => setF({ ...f, password: e.target.value })}
        data-testid="user-new-password"
      />
      <select
        className="fleet-select"
        aria-label={t('users.role')}
        value={f.role}
        onChange={(e) => setF({ ...f, role: e.target.value as FleetRole })}
        data-testid="user-new-role"
      >
        <option value="user">{t('role.user')}</option>
        <option value="admin">{t('role.admin')}</option>
      </select>
      <Button type="primary" htmlType="submit" data-testid="user-create">
        {t('users.create')}
      </Button>
    </form>
  );
}

export default function UsersPage() {
  const t = useT();
  const { data: users, reload: load } = useLoader(
    async () => asList<FleetUserRow>(await api.get<unknown>('users', { limit: 200 }), 'users'),
    [] as FleetUserRow[],
  );
  const [remove, setRemove] = useState<FleetUserRow | null>(null);
  const [reset, setReset] = useState<FleetUserRow | null>(null);
  const [password, setPassword] = useState('');

  const patch = async (u: FleetUserRow, body: object) => {
    try {
      await api.patch(`users/${encodeURIComponent(u.id)}`, body);
      await load();
    } catch (e) {
      showError(e);
      throw e;
    }
  };

  return (
    <section data-testid="view-users">
      <h2>{t('users.title')}</h2>
      <CreateUser onMade={() => void load()} />
      <Table<FleetUserRow>
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={users}
        onRow={(u) => ({ 'data-testid': 'user-row', 'data-username': u.username }) as object}
        columns={[
          { key: 'name', title: t('field.username'), dataIndex: 'username' },
          { key: 'email', title: t('field.email'), dataIndex: 'email' },
          {
            key: 'role',
            title: t('users.role'),
            render: (_, u) => (
              <select
                className="fleet-select"
                aria-label={t('users.roleOf', { name: u.username })}
                value={u.role}
                onChange={(e) => void patch(u, { role: e.target.value }).catch(() => undefined)}
                data-testid="user-role"
              >
                <option value="user">{t('role.user')}</option>
                <option value="admin">{t('role.admin')}</option>
              </select>
            ),
          },
          {
            key: 'flags',
            title: t('users.flags'),
            render: (_, u) => (
              <Space size={2}>
                {u.disabled && <Tag color="error">{t('users.disabled')}</Tag>}
                {u.totp_enabled && <Tag>2FA</Tag>}
                {u.oidc && <Tag>OIDC</Tag>}
              </Space>
            ),
          },
          {
            key: 'groups',
            title: t('devices.groups'),
            render: (_, u) => (u.groups ?? []).map((g) => <Tag key={g.id}>{g.name}</Tag>),
          },
          { key: 'at', title: t('jobs.created'), render: (_, u) => fmtTime(u.created_at) },
          {
            key: 'act',
            title: '',
            render: (_, u) => (
              <Space>
                <Button
                  size="small"
                  onClick={() => void patch(u, { disabled: !u.disabled }).catch(() => undefined)}
                  data-testid="user-disable"
                >
                  {u.disabled ? t('users.enable') : t('users.disable')}
                </Button>
                <Button
                  size="small"
                  onClick={() => {
                    setPassword('');
                    setReset(u);
                  }}
                  data-testid="user-reset-password"
                >
                  {t('users.resetPassword')}
                </Button>
                <Button size="small" danger onClick={() => setRemove(u)} data-testid="user-delete">
                  {t('common.delete')}
                </Button>
              </Space>
            ),
          },
        ]}
      />
      <Confirm
        open={remove !== null}
        danger
        title={t('users.deleteTitle', { name: remove?.username ?? '' })}
        onCancel={() => setRemove(null)}
        onConfirm={async () => {
          if (!remove) return;
          await api.del(`users/${encodeURIComponent(remove.id)}`);
          setRemove(null);
          await load();
        }}
      />
      <Confirm
        open={reset !== null}
        title={t('users.resetTitle', { name: reset?.username ?? '' })}
        onCancel={() => setReset(null)}
        onConfirm={async () => {
          if (!reset) return;
          await patch(reset, { password });
          showStatus(t('users.passwordSet', { name: reset.username }));
          setReset(null);
        }}
      >
        <Input
          type="password"
          aria-label={t('field.newPassword')}
          value={password}
          onChange={(e) => setPassword(e.target.value)}
          data-testid="user-new-password-reset"
        />
      </Confirm>
    </section>
  );
}
