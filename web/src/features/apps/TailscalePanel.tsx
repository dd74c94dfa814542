import { useEffect, useState } from 'react';
import { Alert, Button, Checkbox, Divider, Input, Space, Spin, Tabs, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import type { AppSummary } from '@kvm/protocol/apps';
import { TAILSCALE_DEFAULT_CONFIG, type TailscaleConfig } from '@kvm/protocol/tailscale';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import {
  setTailscaleConfig,
  tailscaleConfig,
  tailscaleLogout,
  tailscaleUp,
  type TailscaleOptions,
} from './apps-api';
import {
  loadApps,
  pauseBindPolling,
  requestLoginUrl,
  resumeBindPolling,
  stopBindPolling,
  useApps,
} from './apps-store';
import { LoginLink } from './LoginLink';
import { UnbindButton } from './UnbindButton';

function BindSection({ config }: { config: TailscaleConfig }) {
  const { t } = useTranslation();
  const loginUrl = useApps((s) => s.loginUrl);
  const polling = useApps((s) => s.bindPolling);
  const login = useApps((s) => s.login);
  // null: the device's (its configuration may arrive after the panel opened).
  const [typed, setServer] = useState<string | null>(null);
  const server = typed ?? config.login_server;
  const [authKey, setAuthKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const serverChanged = server.trim() !== config.login_server;

  const getUrl = async () => {
    setBusy(true);
    setError(null);
    try {
      const url = await requestLoginUrl(serverChanged ? server.trim() : null);
      if (!url) setError(t('apps.tailscale.noUrlYet'));
    } catch (err) {
      setError(withDetail(t('apps.tailscale.loginFailed'), err));
    } finally {
      setBusy(false);
    }
  };

  const bindWithKey = async () => {
    if (!authKey.trim()) {
      setError(t('apps.tailscale.authKeyRequired'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await tailscaleUp(authKey, server);
      await loadApps().catch(() => undefined);
    } catch (err) {
      setError(withDetail(t('apps.tailscale.loginFailed'), err));
    } finally {
      // The key leaves the page with the call, whatever the answer.
      setAuthKey('');
      setBusy(false);
    }
  };

  return (
    <div data-testid="tailscale-bind">
      <Typography.Text>{t('apps.tailscale.login_server')}</Typography.Text>
      <Input
        value={server}
        placeholder="https://headscale.example.com"
        onChange={(e) => setServer(e.target.value)}
        data-testid="tailscale-login_server"
      />
      <Tabs
        items={[
          {
            key: 'url',
            label: t('apps.tailscale.byUrl'),
            children: (
              <Space orientation="vertical" style={{ width: '100%' }}>
                {loginUrl && <LoginLink url={loginUrl} testId="tailscale-login" />}
                {polling && (
                  <Space data-testid="tailscale-waiting" data-status={login?.status ?? ''}>
                    <Spin size="small" />
                    <Typography.Text type="secondary">
                      {login?.status === 'NeedsMachineAuth'
                        ? t('apps.tailscale.needsMachineAuth')
                        : t('apps.tailscale.waiting')}
                    </Typography.Text>
                  </Space>
                )}
                <Space>
                  <Button
                    type={loginUrl ? 'default' : 'primary'}
                    loading={busy}
                    onClick={() => void getUrl()}
                    data-testid="tailscale-login-get"
                  >
                    {loginUrl ? t('apps.tailscale.newUrl') : t('apps.tailscale.getUrl')}
                  </Button>
                  {polling && (
                    <Button onClick={stopBindPolling} data-testid="tailscale-login-cancel">
                      {t('common.cancel')}
                    </Button>
                  )}
                </Space>
              </Space>
            ),
          },
          {
            key: 'key',
            label: <span data-testid="tailscale-tab-key">{t('apps.tailscale.byKey')}</span>,
            children: (
              <Space orientation="vertical" style={{ width: '100%' }}>
                <Input.Password
                  value={authKey}
                  placeholder="tskey-auth-…"
                  autoComplete="off"
                  onChange={(e) => setAuthKey(e.target.value)}
                  data-testid="tailscale-auth-key"
                />
                <Button
                  type="primary"
                  loading={busy}
                  onClick={() => void bindWithKey()}
                  data-testid="tailscale-key-bind"
                >
                  {t('apps.bind')}
                </Button>
              </Space>
            ),
          },
        ]}
      />
      {error && (
        <Alert type="error" showIcon title={<span data-testid="tailscale-error">{error}</span>} />
      )}
    </div>
  );
}

function optionsOf(config: TailscaleConfig): TailscaleOptions {
  return {
    exit_node: config.exit_node,
    use_exit_node: config.use_exit_node,
    advertise_routes: config.advertise_routes.join(', '),
    accept_routes: config.accept_routes,
    accept_dns: config.accept_dns,
  };
}

function OptionsSection({ config }: { config: TailscaleConfig }) {
  const { t } = useTranslation();
  const message = useMessage();
  // Mounted again (its key) when the device's configuration arrives.
  const [draft, setDraft] = useState(() => optionsOf(config));
  const [busy, setBusy] = useState(false);

  const save = async () => {
    setBusy(true);
    try {
      await setTailscaleConfig({
        ...draft,
        use_exit_node: draft.use_exit_node.trim(),
        advertise_routes: draft.advertise_routes.trim(),
      });
      void message.success(t('apps.saved'));
      await loadApps().catch(() => undefined);
    } catch (err) {
      void message.error(withDetail(t('apps.actionFailed'), err));
    } finally {
      setBusy(false);
    }
  };

  const text = (key: 'use_exit_node' | 'advertise_routes', placeholder: string) => (
    <div>
      <Typography.Text>{t(`apps.tailscale.${key}`)}</Typography.Text>
      <Input
        value={draft[key]}
        placeholder={placeholder}
        onChange={(e) => setDraft({ ...draft, [key]: e.target.value })}
        data-testid={`tailscale-${key}`}
      />
    </div>
  );
  const check = (key: 'exit_node' | 'accept_routes' | 'accept_dns') => (
    <Checkbox
      checked={draft[key]}
      onChange={(e) => setDraft({ ...draft, [key]: e.target.checked })}
      data-testid={`tailscale-${key}`}
    >
      {t(`apps.tailscale.${key}`)}
    </Checkbox>
  );

  return (
    <Space orientation="vertical" style={{ width: '100%' }} data-testid="tailscale-options">
      {text('use_exit_node', '100.64.0.1')}
      {text('advertise_routes', '192.168.8.0/24')}
      {check('exit_node')}
      {check('accept_routes')}
      {check('accept_dns')}
      <Button loading={busy} onClick={() => void save()} data-testid="tailscale-options-save">
        {t('apps.save')}
      </Button>
    </Space>
  );
}

/**
 * Tailscale (GL's `/api/tailscale/*`): bind with the login URL (a link and a QR code, polled
 * until bound, kept across a reload by `tailscale_bind_status_polling`) or an auth key; a custom
 * control server (headscale); exit node, routes, DNS; unbind after a confirmation.
 */
export function TailscalePanel({ app }: { app: AppSummary }) {
  const [config, setConfig] = useState<TailscaleConfig>(TAILSCALE_DEFAULT_CONFIG);

  useEffect(() => {
    tailscaleConfig().then(setConfig, () => undefined);
    void resumeBindPolling();
    return () => pauseBindPolling();
  }, []);

  const bound =
    app.state === 'connected' || app.state === 'connecting' || app.state === 'unreachable';
  const unbind = async () => {
    await tailscaleLogout();
    stopBindPolling();
  };
  const configKey = JSON.stringify(config);

  return (
    <div data-testid="tailscale-panel">
      {app.running && !bound && <BindSection config={config} />}
      <Divider style={{ margin: '12px 0' }} />
      <OptionsSection key={configKey} config={config} />
      {bound && (
        <>
          <Divider style={{ margin: '12px 0' }} />
          <UnbindButton name={app.name} testId="tailscale-unbind" onUnbind={unbind} />
        </>
      )}
    </div>
  );
}
