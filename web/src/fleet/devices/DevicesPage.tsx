/**
 * The device list: server-side search (debounced), group and online filters, cursor paging and
 * the total; per row the status dot, name (renamed inline by its owner or an admin), model,
 * version, owner, groups, last seen, "Open console" (`/d/<id>/`, new tab) and unbind (confirmed).
 * Rows are selected for the batch bar; "Add device" claims a code (a bind link fills it in).
 */
import { useCallback, useEffect, useState, useSyncExternalStore } from 'react';
import { Button, Input, Space, Table, Tag } from 'antd';
import type { FleetDeviceRow } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { fmtTime } from '../lib/format';
import { showError, showStatus, useSession, isAdmin } from '../lib/session';
import { Confirm } from '../components/Confirm';
import { AddDevice } from './AddDevice';
import { BatchBar } from './BatchBar';
import { DeviceQuery, type DeviceFilter } from './device-query';
import { setSelected, useSelection } from './selection';
import { DeviceName } from './DeviceName';
import { DeviceGroupSelect, PageButtons } from './DeviceListParts';

const SEARCH_DEBOUNCE_MS = 300;

export default function DevicesPage() {
  const t = useT();
  const me = useSession((s) => s.me);
  const [filter, setFilter] = useState<DeviceFilter>({ q: '', group: '', online: '' });
  const [search, setSearch] = useState('');
  const [query] = useState(() => new DeviceQuery());
  const snap = useSyncExternalStore(query.subscribe, query.getSnapshot);
  const page = snap.page;
  const [unbind, setUnbind] = useState<FleetDeviceRow | null>(null);
  const selected = useSelection((s) => s.selected);

  const reload = useCallback(() => query.load().catch(showError), [query]);

  // the search box asks the fleet once typing pauses
  useEffect(() => {
    const timer = setTimeout(
      () => setFilter((f) => (f.q === search ? f : { ...f, q: search })),
      SEARCH_DEBOUNCE_MS,
    );
    return () => clearTimeout(timer);
  }, [search]);

  useEffect(() => {
    query.setFilter(filter).catch(showError);
  }, [query, filter]);

  useEffect(() => {
    const timer = setInterval(() => {
      if (!document.hidden) void reload();
    }, 10_000);
    return () => clearInterval(timer);
  }, [reload]);

  const rows = page?.devices ?? [];
  const allOnPage = rows.length > 0 && rows.every((r) => selected.has(r.id));
  const canRename = (d: FleetDeviceRow) => isAdmin(me) || d.owner === me?.username;

  return (
    <section data-testid="view-devices">
      <h2>{t('devices.title')}</h2>
      <AddDevice onAdded={() => void reload()} />
      <div className="fleet-bar">
        <Input
          style={{ maxWidth: 260 }}
          placeholder={t('devices.search')}
          aria-label={t('devices.search')}
          value={search}
          maxLength={64}
          onChange={(e) => setSearch(e.target.value)}
          data-testid="device-search"
        />
        <DeviceGroupSelect
          value={filter.group}
          onChange={(group) => setFilter({ ...filter, group })}
          testId="device-group-filter"
        />
        <select
          className="fleet-select"
          aria-label={t('devices.online')}
          value={filter.online}
          onChange={(e) => setFilter({ ...filter, online: e.target.value })}
          data-testid="device-online-filter"
        >
          <option value="">{t('devices.onlineAll')}</option>
          <option value="true">{t('devices.onlineOnly')}</option>
          <option value="false">{t('devices.offlineOnly')}</option>
        </select>
        <span data-testid="device-total">{t('devices.total', { n: page?.total ?? 0 })}</span>
      </div>
      <BatchBar />
      <Table<FleetDeviceRow>
        data-testid="device-table"
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={rows}
        locale={{ emptyText: <span data-testid="no-devices">{t('devices.none')}</span> }}
        onRow={(d) => ({ 'data-testid': 'device-row', 'data-device-id': d.id }) as object}
        columns={[
          {
            key: 'sel',
            width: 36,
            title: (
              <input
                type="checkbox"
                aria-label={t('devices.selectAll')}
                checked={allOnPage}
                onChange={(e) => setSelected(rows, e.target.checked)}
                data-testid="device-select-all"
              />
            ),
            render: (_, d) => (
              <input
                type="checkbox"
                aria-label={t('devices.select', { name: d.name })}
                checked={selected.has(d.id)}
                onChange={(e) => setSelected([d], e.target.checked)}
                data-testid="device-select"
              />
            ),
          },
          {
            key: 'status',
            title: t('devices.status'),
            width: 60,
            render: (_, d) => (
              <span
                className={`fleet-dot${d.online ? ' on' : ''}`}
                role="img"
                aria-label={d.online ? t('devices.isOnline') : t('devices.isOffline')}
                data-testid="device-online"
                data-online={d.online ? 'true' : 'false'}
              />
            ),
          },
          {
            key: 'name',
            title: t('devices.name'),
            render: (_, d) => (
              <DeviceName device={d} editable={canRename(d)} onRenamed={() => void reload()} />
            ),
          },
          { key: 'model', title: t('devices.model'), dataIndex: 'model' },
          { key: 'version', title: t('devices.version'), dataIndex: 'version' },
          {
            key: 'owner',
            title: t('devices.owner'),
            render: (_, d) => <span data-testid="device-owner">{d.owner}</span>,
          },
          {
            key: 'groups',
            title: t('devices.groups'),
            render: (_, d) => (d.groups ?? []).map((g) => <Tag key={g.id}>{g.name}</Tag>),
          },
          { key: 'seen', title: t('devices.lastSeen'), render: (_, d) => fmtTime(d.last_seen) },
          {
            key: 'act',
            title: <span className="sr-only">{t('devices.actions')}</span>,
            render: (_, d) => (
              <Space>
                <a
                  href={`/d/${encodeURIComponent(d.id)}/`}
                  target="_blank"
                  rel="noopener"
                  data-testid="device-open"
                >
                  {t('devices.open')}
                </a>
                <Button
                  size="small"
                  danger
                  aria-label={t('devices.unbindName', { name: d.name })}
                  onClick={() => setUnbind(d)}
                  data-testid="device-unbind"
                >
                  {t('devices.unbind')}
                </Button>
              </Space>
            ),
          },
        ]}
      />
      <div className="fleet-bar">
        <PageButtons
          query={query}
          snap={snap}
          prefix="device"
          between={<span data-testid="device-page">{t('common.page', { n: snap.index + 1 })}</span>}
        />
      </div>
      <Confirm
        open={unbind !== null}
        danger
        title={t('devices.unbindTitle', { name: unbind?.name ?? '' })}
        onCancel={() => setUnbind(null)}
        onConfirm={async () => {
          if (!unbind) return;
          await api.del(`devices/${encodeURIComponent(unbind.id)}`);
          showStatus(t('devices.unbound', { name: unbind.name }));
          setSelected([unbind], false);
          setUnbind(null);
          await reload();
        }}
      >
        {t('devices.unbindText')}
      </Confirm>
    </section>
  );
}
