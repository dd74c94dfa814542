import { useEffect, useState } from 'react';
import { Alert, Button, Card, Descriptions, Space, Spin, Switch, Tag, Typography } from 'antd';
import { AppstoreOutlined, LeftOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { APP_STATUS_POLL_MS, type AppId, type AppSummary } from '@kvm/protocol/apps';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import { setAppRunning } from './apps-api';
import { loadApps, openApp, useApps } from './apps-store';
import { formatBytes, STATE_COLOR, STATE_TEXT, usePoll } from './app-text';
import { NetbirdPanel } from './NetbirdPanel';
import { TailscalePanel } from './TailscalePanel';
import { WireguardPanel } from './WireguardPanel';
import { ZerotierPanel } from './ZerotierPanel';

export function StateTag({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  return (
    <Tag color={STATE_COLOR[app.state]} data-testid={`app-state-${app.id}`} data-state={app.state}>
      {t(STATE_TEXT[app.state])}
    </Tag>
  );
}

/** What the list and the app's panel show about an app: addresses, server, memory, version. */
export function AppFacts({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  const items = [];
  if (app.addresses.length > 0) {
    items.push({
      key: 'addresses',
      label: t('apps.addresses'),
      children: <span data-testid={`app-addresses-${app.id}`}>{app.addresses.join(', ')}</span>,
    });
  }
  if (app.control_url) {
    items.push({
      key: 'control',
      label: t('apps.controlServer'),
      children: <span data-testid={`app-control-${app.id}`}>{app.control_url}</span>,
    });
  }
  if (app.rss_bytes !== null) {
    const limit =
      app.memory_limit_bytes === null ? '' : ` / ${formatBytes(app.memory_limit_bytes)}`;
    items.push({
      key: 'memory',
      label: t('apps.memory'),
      children: (
        <span data-testid={`app-memory-${app.id}`}>{`${formatBytes(app.rss_bytes)}${limit}`}</span>
      ),
    });
  }
  if (app.version) {
    items.push({
      key: 'version',
      label: t('apps.version'),
      children: <span data-testid={`app-version-${app.id}`}>{app.version}</span>,
    });
  }
  if (items.length === 0) return null;
  return <Descriptions size="small" column={1} items={items} />;
}

/** The detail in the state's colour: a warning when unreachable, an error when failed. */
export function AppDetail({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  if (!app.detail) return null;
  if (app.state === 'not_installed') {
    return (
      <Alert
        type="info"
        showIcon
        title={t('apps.notInstalled')}
        description={<span data-testid={`app-detail-${app.id}`}>{app.detail}</span>}
      />
    );
  }
  const type = app.state === 'error' ? 'error' : app.state === 'unreachable' ? 'warning' : 'info';
  return (
    <Alert
      type={type}
      showIcon
      title={<span data-testid={`app-detail-${app.id}`}>{app.detail}</span>}
    />
  );
}

function AppCard({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  return (
    <Card
      size="small"
      hoverable
      onClick={() => openApp(app.id)}
      data-testid={`app-card-${app.id}`}
      title={app.name}
      extra={<StateTag app={app} />}
    >
      {app.state === 'not_installed' ? (
        <Typography.Text type="secondary" data-testid={`app-not-installed-${app.id}`}>
          {t('apps.notInstalled')}
          {app.detail ? `: ${app.detail}` : ''}
        </Typography.Text>
      ) : (
        <>
          {app.detail && (
            <Typography.Paragraph
              type={
                app.state === 'error'
                  ? 'danger'
                  : app.state === 'unreachable'
                    ? 'warning'
                    : 'secondary'
              }
              style={{ marginBottom: 4 }}
              data-testid={`app-card-detail-${app.id}`}
            >
              {app.detail}
            </Typography.Paragraph>
          )}
          <AppFacts app={app} />
        </>
      )}
    </Card>
  );
}

/** The run switch: stopping asks first (the app may be the way this console is reached). */
export function RunSwitch({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  const message = useMessage();
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);

  const apply = async (run: boolean) => {
    setBusy(true);
    try {
      await setAppRunning(app.id, run);
      await loadApps().catch(() => undefined);
    } catch (err) {
      void message.error(withDetail(t('apps.actionFailed'), err));
      throw err;
    } finally {
      setBusy(false);
    }
  };

  return (
    <Space style={{ width: '100%', justifyContent: 'space-between' }}>
      <Typography.Text strong>{t('apps.run')}</Typography.Text>
      <Switch
        checked={app.running}
        loading={busy}
        onChange={(next) => {
          if (next) void apply(true).catch(() => undefined);
          else setAsking(true);
        }}
        data-testid={`app-run-${app.id}`}
      />
      <ConfirmDialog
        open={asking}
        onConfirm={async () => {
          await apply(false);
          setAsking(false);
        }}
        onCancel={() => setAsking(false)}
      >
        <span data-testid="app-stop-confirm">{t('apps.stopConfirm', { name: app.name })}</span>
      </ConfirmDialog>
    </Space>
  );
}

function AppBody({ id, app }: { id: AppId; app: AppSummary }) {
  switch (id) {
    case 'tailscale':
      return <TailscalePanel app={app} />;
    case 'netbird':
      return <NetbirdPanel app={app} />;
    case 'zerotier':
      return <ZerotierPanel app={app} />;
    case 'wireguard':
      return <WireguardPanel app={app} />;
  }
}

function AppView({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  return (
    <div data-testid={`app-panel-${app.id}`}>
      <Space style={{ marginBottom: 12 }}>
        <Button
          icon={<LeftOutlined />}
          size="small"
          onClick={() => openApp(null)}
          data-testid="apps-back"
        >
          {t('apps.back')}
        </Button>
        <Typography.Text strong>{app.name}</Typography.Text>
        <StateTag app={app} />
      </Space>
      <Space orientation="vertical" style={{ width: '100%' }} size={12}>
        <AppDetail app={app} />
        {app.installed && <RunSwitch app={app} />}
        <AppFacts app={app} />
        {app.installed && <AppBody id={app.id} app={app} />}
      </Space>
    </div>
  );
}

/**
 * SPEC 2's apps center: the private-network apps with their states (`GET /api/apps`, polled
 * while the drawer is open and the tab shows), the coming-soon entry, and an app's own panel.
 */
export default function AppsPanel() {
  const { t } = useTranslation();
  const apps = useApps((s) => s.apps);
  const open = useApps((s) => s.open);
  const [loadError, setLoadError] = useState<string | null>(null);

  useEffect(() => {
    loadApps()
      .then(() => setLoadError(null))
      .catch((err: unknown) => setLoadError(withDetail(t('apps.loadFailed'), err)));
    return () => openApp(null);
  }, [t]);
  usePoll(() => loadApps(), APP_STATUS_POLL_MS);

  if (!apps) {
    return (
      <div data-testid="apps-panel">
        {loadError ? (
          <Alert
            type="error"
            showIcon
            title={<span data-testid="apps-load-error">{loadError}</span>}
          />
        ) : (
          <div style={{ textAlign: 'center', padding: 24 }}>
            <Spin />
          </div>
        )}
      </div>
    );
  }

  const shown = open ? apps.find((a) => a.id === open) : undefined;
  if (shown) {
    return (
      <div data-testid="apps-panel">
        <AppView app={shown} />
      </div>
    );
  }

  return (
    <div data-testid="apps-panel">
      <Typography.Paragraph type="secondary">{t('apps.intro')}</Typography.Paragraph>
      <Space orientation="vertical" style={{ width: '100%' }} size={8} data-testid="apps-list">
        {apps.map((app) => (
          <AppCard key={app.id} app={app} />
        ))}
        <Card size="small" data-testid="app-card-coming-soon" style={{ opacity: 0.6 }}>
          <Space>
            <AppstoreOutlined />
            <Typography.Text type="secondary">{t('apps.comingSoon')}</Typography.Text>
          </Space>
        </Card>
      </Space>
    </div>
  );
}
