import { useEffect, useState } from 'react';
import { Alert, Button, Space, Spin, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { withDetail } from '../../lib/api';
import { requestBindCode, resumeBindCode, useCloud } from './cloud-store';
import { useSecondsLeft } from './cloud-text';

/**
 * Binding by code (docs/cloud.md "Binding" 1): the device shows the fleet's 8-digit code, valid
 * 60 s, and polls its state until an account claims the code; a new code on request.
 */
export function BindByCode() {
  const { t } = useTranslation();
  const code = useCloud((s) => s.code);
  const polling = useCloud((s) => s.polling);
  const secondsLeft = useSecondsLeft(code?.expiresAt ?? null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    resumeBindCode();
  }, []);

  const get = async () => {
    setBusy(true);
    setError(null);
    try {
      await requestBindCode();
    } catch (err) {
      setError(withDetail(t('cloud.bind.codeFailed'), err));
    } finally {
      setBusy(false);
    }
  };

  const live = code !== null && secondsLeft > 0;
  return (
    <div data-testid="cloud-bind-code">
      {code && (
        <>
          <Typography.Paragraph>{t('cloud.bind.codeHint')}</Typography.Paragraph>
          <Typography.Title
            level={2}
            copyable={live ? { text: code.code } : false}
            delete={!live}
            style={{ fontFamily: 'monospace', letterSpacing: 4, margin: 0 }}
            data-testid="cloud-code"
          >
            {code.code}
          </Typography.Title>
          <Typography.Text
            type={live ? 'secondary' : 'danger'}
            data-testid="cloud-code-expiry"
            data-seconds={secondsLeft}
          >
            {live ? t('cloud.bind.expiresIn', { seconds: secondsLeft }) : t('cloud.bind.expired')}
          </Typography.Text>
          {live && polling && (
            <div style={{ marginTop: 8 }} data-testid="cloud-code-waiting">
              <Space>
                <Spin size="small" />
                <Typography.Text type="secondary">{t('cloud.bind.waiting')}</Typography.Text>
              </Space>
            </div>
          )}
        </>
      )}
      <div style={{ marginTop: 12 }}>
        <Button
          type={live ? 'default' : 'primary'}
          loading={busy}
          onClick={() => void get()}
          data-testid="cloud-code-get"
        >
          {code ? t('cloud.bind.renew') : t('cloud.bind.get')}
        </Button>
      </div>
      {error && (
        <Alert
          type="error"
          showIcon
          style={{ marginTop: 8 }}
          title={<span data-testid="cloud-code-error">{error}</span>}
        />
      )}
    </div>
  );
}
