import { useEffect, useState } from 'react';
import { Alert, Button, Divider, Input, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import type { AppSummary } from '@kvm/protocol/apps';
import { netbirdManagementUrlProblem } from '@kvm/protocol/netbird';
import { withDetail } from '../../lib/api';
import { netbirdConfig, netbirdLogin, netbirdLogout, setNetbirdManagementUrl } from './apps-api';
import { loadApps } from './apps-store';
import { LoginLink } from './LoginLink';
import { UnbindButton } from './UnbindButton';

/**
 * NetBird (`/api/netbird/*`): the management server (self-hosted NetBird; saved before a login
 * when changed), login with a setup key or by SSO (the login URL as a link and a QR code); the
 * run switch is `start`/`stop`; unbind is `logout`.
 */
export function NetbirdPanel({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  const [savedUrl, setSavedUrl] = useState<string | null>(null);
  const [management, setManagement] = useState('');
  const [setupKey, setSetupKey] = useState('');
  const [loginUrl, setLoginUrl] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    netbirdConfig().then(
      (config) => {
        setSavedUrl(config.management_url);
        setManagement(config.management_url);
      },
      () => undefined,
    );
  }, []);

  const login = async (key: string | null) => {
    const url = management.trim();
    const problem = netbirdManagementUrlProblem(url);
    if (problem) {
      setError(`${t('apps.netbird.managementUrl')}: ${problem}`);
      return;
    }
    if (key !== null && !key.trim()) {
      setError(t('apps.netbird.setupKeyRequired'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      if (url !== savedUrl) {
        await setNetbirdManagementUrl(url);
        setSavedUrl(url);
      }
      const answer = await netbirdLogin(key);
      setLoginUrl(answer.login_url || null);
      await loadApps().catch(() => undefined);
    } catch (err) {
      setError(withDetail(t('apps.actionFailed'), err));
    } finally {
      // The key leaves the page with the call, whatever the answer.
      setSetupKey('');
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
              onClick={() => void login(setupKey)}
              data-testid="netbird-up"
            >
              {t('apps.bind')}
            </Button>
            <Button loading={busy} onClick={() => void login(null)} data-testid="netbird-sso">
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
          <UnbindButton name={app.name} testId="netbird-unbind" onUnbind={netbirdLogout} />
        </>
      )}
    </div>
  );
}
