/**
 * The account: TOTP set up (the otpauth URI and the secret; enabled by a code) or disabled
 * (password and code), "forget trusted browsers", sign out.
 */
import { useState } from 'react';
import { Button, Descriptions, Input, Space } from 'antd';
import type { FleetMe } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { loadMe, showError, showStatus, signedOut, useSession } from '../lib/session';

export default function AccountPage() {
  const t = useT();
  const me = useSession((s) => s.me) as FleetMe;
  const [setup, setSetup] = useState<{ secret: string; uri: string } | null>(null);
  const [code, setCode] = useState('');
  const [password, setPassword] = useState('');

  const run = async (fn: () => Promise<unknown>, done: string) => {
    try {
      await fn();
      showStatus(done);
      setCode('');
      setPassword('');
      await loadMe();
    } catch (e) {
      showError(e);
    }
  };

  return (
    <section data-testid="view-account">
      <h2>{t('account.title')}</h2>
      <Descriptions size="small" column={1}>
        <Descriptions.Item label={t('field.username')}>{me.username}</Descriptions.Item>
        <Descriptions.Item label={t('field.email')}>{me.email}</Descriptions.Item>
        <Descriptions.Item label={t('users.role')}>{t(`role.${me.role}`)}</Descriptions.Item>
        {me.oidc_issuer && (
          <Descriptions.Item label="OpenID Connect">{me.oidc_issuer}</Descriptions.Item>
        )}
      </Descriptions>
      <h3>{t('account.totp')}</h3>
      <p data-testid="totp-state" data-enabled={me.totp_enabled ? 'true' : 'false'}>
        {me.totp_enabled ? t('account.totpOn') : t('account.totpOff')}
      </p>
      {!me.totp_enabled && !setup && (
        <Button
          onClick={() => {
            api.post<{ secret: string; uri: string }>('totp/setup').then(setSetup, showError);
          }}
          data-testid="totp-setup"
        >
          {t('account.totpSetup')}
        </Button>
      )}
      {!me.totp_enabled && setup && (
        <div className="fleet-form">
          <p>{t('account.totpScan')}</p>
          <code data-testid="totp-uri" style={{ wordBreak: 'break-all' }}>
            {setup.uri}
          </code>
          <code data-testid="totp-secret">{setup.secret}</code>
          <label htmlFor="totp-code">{t('field.totp')}</label>
          <Input
            id="totp-code"
            inputMode="numeric"
            maxLength={6}
            value={code}
            onChange={(e) => setCode(e.target.value)}
            data-testid="totp-code"
          />
          <Button
            type="primary"
            onClick={() =>
              void run(() => api.post('totp/enable', { code }), t('account.totpEnabled')).then(() =>
                setSetup(null),
              )
            }
            data-testid="totp-enable"
          >
            {t('account.totpEnable')}
          </Button>
        </div>
      )}
      {me.totp_enabled && (
        <div className="fleet-form">
          <label htmlFor="totp-disable-password">{t('field.password')}</label>
          <Input
            id="totp-disable-password"
            type="password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            data-testid="totp-disable-password"
          />
          <label htmlFor="totp-disable-code">{t('field.totp')}</label>
          <Input
            id="totp-disable-code"
            inputMode="numeric"
            maxLength={6}
            value={code}
            onChange={(e) => setCode(e.target.value)}
            data-testid="totp-disable-code"
          />
          <Button
            danger
            onClick={() =>
              void run(
                () => api.post('totp/disable', { password, code }),
                t('account.totpDisabled'),
              )
            }
            data-testid="totp-disable"
          >
            {t('account.totpDisable')}
          </Button>
        </div>
      )}
      <h3>{t('account.browsers')}</h3>
      <Space>
        <Button
          onClick={() =>
            void run(() => api.post('totp/trusted/forget'), t('account.browsersForgotten'))
          }
          data-testid="forget-browsers"
        >
          {t('account.forgetBrowsers')}
        </Button>
        <Button
          onClick={() => {
            void api.post('logout').finally(signedOut);
          }}
          data-testid="account-logout"
        >
          {t('account.signOut')}
        </Button>
      </Space>
    </section>
  );
}
