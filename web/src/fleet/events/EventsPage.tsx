/** The event log (`GET events`): newest first, by kind and device, "older" pages on. */
import { useCallback, useEffect, useState } from 'react';
import { Button, Input, Table } from 'antd';
import type { FleetEvent, FleetEventPage } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { fmtTime } from '../lib/format';
import { showError } from '../lib/session';

export const EVENT_KINDS = [
  'signup',
  'login',
  'login_failed',
  'logout',
  'bound',
  'bind_claimed',
  'unbound',
  'device_online',
  'device_offline',
  'console_opened',
  'action',
  'job_started',
  'job_finished',
  'rollout_stopped',
  'user_created',
  'user_changed',
  'user_deleted',
  'group_changed',
  'file_added',
  'file_removed',
  'alert_sent',
  'alert_failed',
];

export default function EventsPage() {
  const t = useT();
  const [kind, setKind] = useState('');
  const [device, setDevice] = useState('');
  const [events, setEvents] = useState<FleetEvent[]>([]);
  const [next, setNext] = useState<string | null>(null);

  const load = useCallback(
    async (before: string | null) => {
      try {
        const page = await api.get<FleetEventPage>('events', {
          kind: kind || undefined,
          device: device.trim() || undefined,
          before: before ?? undefined,
          limit: 100,
        });
        setEvents((old) => (before ? [...old, ...page.events] : page.events));
        setNext(page.next);
      } catch (e) {
        showError(e);
      }
    },
    [kind, device],
  );

  useEffect(() => {
    const timer = setTimeout(() => void load(null), 300);
    return () => clearTimeout(timer);
  }, [load]);

  return (
    <section data-testid="view-events">
      <h2>{t('events.title')}</h2>
      <div className="fleet-bar">
        <select
          className="fleet-select"
          aria-label={t('events.kind')}
          value={kind}
          onChange={(e) => setKind(e.target.value)}
          data-testid="event-kind-filter"
        >
          <option value="">{t('events.allKinds')}</option>
          {EVENT_KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
        <Input
          style={{ maxWidth: 240 }}
          placeholder={t('events.device')}
          aria-label={t('events.device')}
          value={device}
          onChange={(e) => setDevice(e.target.value)}
          data-testid="event-device-filter"
        />
      </div>
      <Table<FleetEvent>
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={events}
        onRow={(e) => ({ 'data-testid': 'event-row', 'data-kind': e.kind }) as object}
        columns={[
          { key: 'at', title: t('events.at'), render: (_, e) => fmtTime(e.at) },
          { key: 'kind', title: t('events.kind'), dataIndex: 'kind' },
          {
            key: 'device',
            title: t('events.device'),
            render: (_, e) => e.device_name ?? e.device_id ?? '',
          },
          { key: 'actor', title: t('events.actor'), render: (_, e) => e.actor ?? '—' },
          {
            key: 'detail',
            title: t('events.detail'),
            render: (_, e) => (e.detail ? <code>{JSON.stringify(e.detail)}</code> : ''),
          },
        ]}
      />
      {next && (
        <Button onClick={() => void load(next)} data-testid="events-older">
          {t('events.older')}
        </Button>
      )}
    </section>
  );
}
