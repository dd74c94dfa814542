/**
 * Alerts (admin): targets (e-mail or webhook, which events), a webhook's secret shown once at
 * creation, "send test", and the latest deliveries.
 */
import { useState, type FormEvent } from 'react';
import { useLoader } from '../lib/loader';
import { Alert, Button, Input, Space, Table, Tag } from 'antd';
import {
  FLEET_ALERT_EVENTS,
  type FleetAlertDelivery,
  type FleetAlertEvent,
  type FleetAlertTarget,
} from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api, asList } from '../lib/api';
import { fmtTime } from '../lib/format';
import { showError, showStatus } from '../lib/session';
import { Confirm } from '../components/Confirm';

function NewTarget({ onMade }: { onMade: (t: FleetAlertTarget) => void }) {
  const t = useT();
  const [kind, setKind] = useState<FleetAlertTarget['kind']>('email');
  const [target, setTarget] = useState('');
  const [events, setEvents] = useState<FleetAlertEvent[]>([...FLEET_ALERT_EVENTS]);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    try {
      const made = await api.post<FleetAlertTarget>('alerts/targets', {
        kind,
        target: target.trim(),
        events,
      });
      setTarget('');
      onMade(made);
    } catch (e) {
      showError(e);
    }
  };
  return (
    <form className="fleet-bar" onSubmit={(e) => void submit(e)}>
      <select
        className="fleet-select"
        aria-label={t('alerts.kind')}
        value={kind}
        onChange={(e) => setKind(e.target.value === 'webhook' ? 'webhook' : 'email')}
        data-testid="alert-kind"
      >
        <option value="email">{t('alerts.email')}</option>
        <option value="webhook">{t('alerts.webhook')}</option>
      </select>
      <Input
        style={{ maxWidth: 320 }}
        placeholder={kind === 'email' ? 'ops@example.com' : 'https://example.com/hook'}
        aria-label={t('alerts.target')}
        value={target}
        onChange={(e) => setTarget(e.target.value)}
        data-testid="alert-target"
      />
      {FLEET_ALERT_EVENTS.map((ev) => (
        <label key={ev} className="fleet-check">
          <input
            type="checkbox"
            checked={events.includes(ev)}
            onChange={(e) =>
              setEvents((old) => (e.target.checked ? [...old, ev] : old.filter((x) => x !== ev)))
            }
            data-testid={`alert-event-${ev}`}
          />
          {t(`alerts.event.${ev}`)}
        </label>
      ))}
      <Button
        type="primary"
        htmlType="submit"
        disabled={!target.trim() || events.length === 0}
        data-testid="alert-add"
      >
        {t('common.add')}
      </Button>
    </form>
  );
}

export default function AlertsPage() {
  const t = useT();
  const { data, reload: load } = useLoader(
    async () => {
      const [targets, deliveries] = await Promise.all([
        api.get<unknown>('alerts/targets'),
        api.get<unknown>('alerts/deliveries', { limit: 50 }),
      ]);
      return {
        targets: asList<FleetAlertTarget>(targets, 'targets'),
        deliveries: asList<FleetAlertDelivery>(deliveries, 'deliveries'),
      };
    },
    { targets: [] as FleetAlertTarget[], deliveries: [] as FleetAlertDelivery[] },
  );
  const { targets, deliveries } = data;
  const [secret, setSecret] = useState<string | null>(null);
  const [remove, setRemove] = useState<FleetAlertTarget | null>(null);

  const targetName = (id: string) => targets.find((x) => x.id === id)?.target ?? id;

  return (
    <section data-testid="view-alerts">
      <h2>{t('alerts.title')}</h2>
      <NewTarget
        onMade={(made) => {
          setSecret(made.secret ?? null);
          void load();
        }}
      />
      {secret && (
        <Alert
          type="warning"
          closable
          onClose={() => setSecret(null)}
          message={t('alerts.secretOnce')}
          description={<code data-testid="alert-secret">{secret}</code>}
        />
      )}
      <Table<FleetAlertTarget>
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={targets}
        onRow={(x) => ({ 'data-testid': 'alert-row', 'data-target-id': x.id }) as object}
        columns={[
          {
            key: 'kind',
            title: t('alerts.kind'),
            render: (_, x) => <Tag>{t(`alerts.${x.kind}`)}</Tag>,
          },
          { key: 'target', title: t('alerts.target'), dataIndex: 'target' },
          {
            key: 'events',
            title: t('alerts.events'),
            render: (_, x) => x.events.map((ev) => <Tag key={ev}>{t(`alerts.event.${ev}`)}</Tag>),
          },
          {
            key: 'act',
            title: '',
            render: (_, x) => (
              <Space>
                <Button
                  size="small"
                  onClick={() => {
                    api.post(`alerts/targets/${encodeURIComponent(x.id)}/test`).then(() => {
                      showStatus(t('alerts.testSent', { target: x.target }));
                      void load();
                    }, showError);
                  }}
                  data-testid="alert-test"
                >
                  {t('alerts.test')}
                </Button>
                <Button size="small" danger onClick={() => setRemove(x)} data-testid="alert-delete">
                  {t('common.delete')}
                </Button>
              </Space>
            ),
          },
        ]}
      />
      <h3>{t('alerts.deliveries')}</h3>
      <Table<FleetAlertDelivery>
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={deliveries}
        onRow={(d) => ({ 'data-testid': 'delivery-row', 'data-state': d.state }) as object}
        columns={[
          { key: 'at', title: t('events.at'), render: (_, d) => fmtTime(d.created_at) },
          { key: 'target', title: t('alerts.target'), render: (_, d) => targetName(d.target_id) },
          { key: 'event', title: t('alerts.events'), dataIndex: 'event' },
          { key: 'state', title: t('jobs.state'), dataIndex: 'state' },
          { key: 'tries', title: t('alerts.tries'), dataIndex: 'tries' },
          { key: 'error', title: t('alerts.error'), render: (_, d) => d.error ?? '' },
        ]}
      />
      <Confirm
        open={remove !== null}
        danger
        title={t('alerts.deleteTitle', { target: remove?.target ?? '' })}
        onCancel={() => setRemove(null)}
        onConfirm={async () => {
          if (!remove) return;
          await api.del(`alerts/targets/${encodeURIComponent(remove.id)}`);
          setRemove(null);
          await load();
        }}
      />
    </section>
  );
}
