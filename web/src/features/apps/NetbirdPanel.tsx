import { useState } from 'react';
import { Alert, Button, Divider, Input, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import type { AppSummary } from '@kvm/protocol/apps';
import { withDetail } from '../../lib/api';
import { netbirdDown, netbirdLoginUrl, netbirdLogout, netbirdUp } from './apps-api';
import { loadApps } from './apps-store';
import { LoginLink } from './LoginLink';
import { UnbindButton } from './UnbindButton';

/**
 * NetBird (`/api/netbird/*`): up with a setup key and a management URL (self-hosted NetBird), or
 * the SSO login URL (a link and a QR code) when the device gives one; down; unbind (logout).
 */
export function NetbirdPanel({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  const [setupKey, setSetupKey] = useState('');
  const [management, setManagement] = useState('');
  const [loginUrl, setLoginUrl] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      await loadApps().catch(() => undefined);
    } catch (err) {
      setError(withDetail(t('apps.actionFailed'), err));
    } finally {
      setBusy(false);
    }
  };

  const bound =
    app.state === 'connected' || app.state === 'connecting' || app.state === 'unreachable';
  return (
    <div data-testid="netbird-panel">
      {app.running && !bound && (
        <Space orientation="vertical" style={{ width: '100%' }} data-testid="netbird-bind">
          <Typography.Text>{t('apps.netbird.managementUrl')}</Typography.Text>
          <Input
            value={management}
            placeholder="https://netbird.example.com"
            onChange={(e) => setManagement(e.target.value)}
            data-testid="netbird-management-url"
          />
          <Typography.Text>{t('apps.netbird.setupKey')}</Typography.Text>
          <Input.Password
            value={setupKey}
            autoComplete="off"
            onChange={(e) => setSetupKey(e.target.value)}
            data-testid="netbird-setup-key"
          />
          <Space wrap>
            <Button
              type="primary"
              loading={busy}
              onClick={() => {
                if (!setupKey.trim()) {
                  setError(t('apps.netbird.setupKeyRequired'));
                  return;
                }
                void run(async () => {
                  await netbirdUp(setupKey, management);
                  setSetupKey('');
                });
              }}
              data-testid="netbird-up"
            >
              {t('apps.bind')}
            </Button>
            <Button
              loading={busy}
              onClick={() =>
                void run(async () => {
                  setLoginUrl((await netbirdLoginUrl(management)).url || null);
                })
              }
              data-testid="netbird-sso"
            >
              {t('apps.netbird.sso')}
            </Button>
          </Space>
          {loginUrl && <LoginLink url={loginUrl} testId="netbird-login" />}
        </Space>
      )}
      {error && (
        <Alert type="error" showIcon title={<span data-testid="netbird-error">{error}</span>} />
      )}
      {bound && (
        <>
          <Divider style={{ margin: '12px 0' }} />
          <Space wrap>
            <Button loading={busy} onClick={() => void run(netbirdDown)} data-testid="netbird-down">
              {t('apps.netbird.down')}
            </Button>
            <UnbindButton name={app.name} testId="netbird-unbind" onUnbind={netbirdLogout} />
          </Space>
        </>
      )}
    </div>
  );
}
