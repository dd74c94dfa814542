import { useEffect, useState } from 'react';
import { Space, Spin, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { qrDataUrl } from '../settings/qr';

/**
 * A login URL from the device (Tailscale's or NetBird's SSO): a link to open here and a QR code
 * to open it on a phone. Only http(s) URLs become links.
 */
export function LoginLink({ url, testId }: { url: string; testId: string }) {
  const { t } = useTranslation();
  const [qr, setQr] = useState<{ url: string; src: string } | null>(null);
  const safe = /^https?:\/\//i.test(url);

  useEffect(() => {
    let live = true;
    qrDataUrl(url)
      .then((src) => {
        if (live) setQr({ url, src });
      })
      .catch(() => undefined);
    return () => {
      live = false;
    };
  }, [url]);

  return (
    <Space orientation="vertical" data-testid={testId} style={{ width: '100%' }}>
      <Typography.Text>{t('apps.login.openHint')}</Typography.Text>
      {safe ? (
        <Typography.Link
          href={url}
          target="_blank"
          rel="noopener noreferrer"
          copyable={{ text: url }}
          data-testid={`${testId}-url`}
        >
          {url}
        </Typography.Link>
      ) : (
        <Typography.Text copyable data-testid={`${testId}-url`}>
          {url}
        </Typography.Text>
      )}
      {qr?.url === url ? (
        <img
          src={qr.src}
          alt={t('apps.login.qrAlt')}
          width={192}
          height={192}
          data-testid={`${testId}-qr`}
        />
      ) : (
        <Spin size="small" />
      )}
    </Space>
  );
}
