import { useState, type FormEvent } from 'react';
import { Alert, Button, Descriptions, Form, Input, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import type { CloudStatus } from '@kvm/protocol/cloud';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import { probeServer, trustServer, useCloud } from './cloud-store';

/**
 * The fleet server's URL. The device probes its certificate (docs/cloud.md "TLS is always
 * verified"): one no authority vouches for is shown with its SHA-256 fingerprint, and only an
 * explicit "trust this certificate" pins it.
 */
export function ServerSection({ status }: { status: CloudStatus }) {
  const { t } = useTranslation();
  const message = useMessage();
  const probe = useCloud((s) => s.probe);
  const [url, setUrl] = useState(status.url ?? '');
  const [fieldError, setFieldError] = useState<string | null>(null);
  const [busy, setBusy] = useState<'probe' | 'trust' | null>(null);
  const [error, setError] = useState<string | null>(null);

  const connect = async (event?: FormEvent) => {
    event?.preventDefault();
    if (!url.trim()) {
      setFieldError(t('cloud.server.required'));
      return;
    }
    setFieldError(null);
    setError(null);
    setBusy('probe');
    try {
      await probeServer(url);
    } catch (err) {
      setError(withDetail(t('cloud.server.failed'), err));
    } finally {
      setBusy(null);
    }
  };

  const trust = async (fingerprint: string) => {
    setBusy('trust');
    try {
      await trustServer(fingerprint);
      void message.success(t('cloud.server.trustDone'));
    } catch (err) {
      setError(withDetail(t('cloud.server.trustFailed'), err));
    } finally {
      setBusy(null);
    }
  };

  // This panel's own last probe (a pin clears it).
  const shown = probe;

  return (
    <section data-testid="cloud-server">
      <form onSubmit={(e) => void connect(e)} noValidate>
        <Form.Item
          label={t('cloud.server.label')}
          layout="vertical"
          validateStatus={fieldError ? 'error' : undefined}
          help={fieldError}
          style={{ marginBottom: 8 }}
        >
          <Space.Compact style={{ width: '100%' }}>
            <Input
              value={url}
              placeholder={t('cloud.server.placeholder')}
              onChange={(e) => setUrl(e.target.value)}
              disabled={status.bound}
              spellCheck={false}
              autoComplete="off"
              data-testid="cloud-server-url"
            />
            <Button
              htmlType="submit"
              loading={busy === 'probe'}
              disabled={status.bound}
              data-testid="cloud-server-connect"
            >
              {t('cloud.server.connect')}
            </Button>
          </Space.Compact>
        </Form.Item>
      </form>
      {status.pinned && (
        <Typography.Text type="secondary" data-testid="cloud-server-pinned">
          {t('cloud.server.pinned', { fingerprint: status.pinned })}
        </Typography.Text>
      )}
      {shown?.trusted && !status.pinned && (
        <Typography.Text type="success" data-testid="cloud-server-trusted">
          {t('cloud.server.trusted')}
        </Typography.Text>
      )}
      {shown && !shown.trusted && status.pinned !== shown.fingerprint && (
        <Alert
          type="warning"
          showIcon
          data-testid="cloud-server-untrusted"
          title={t('cloud.server.untrusted')}
          description={
            <>
              <Descriptions
                size="small"
                column={1}
                items={[
                  { key: 's', label: t('cloud.server.subject'), children: shown.subject },
                  { key: 'i', label: t('cloud.server.issuer'), children: shown.issuer },
                  { key: 'v', label: t('cloud.server.validTo'), children: shown.valid_to },
                ]}
              />
              <Button
                danger
                style={{ marginTop: 8, whiteSpace: 'normal', height: 'auto', textAlign: 'left' }}
                loading={busy === 'trust'}
                onClick={() => void trust(shown.fingerprint)}
                data-testid="cloud-server-trust"
              >
                {t('cloud.server.trust', { fingerprint: shown.fingerprint })}
              </Button>
            </>
          }
        />
      )}
      {error && (
        <Alert
          type="error"
          showIcon
          style={{ marginTop: 8 }}
          title={<span data-testid="cloud-server-error">{error}</span>}
        />
      )}
    </section>
  );
}
