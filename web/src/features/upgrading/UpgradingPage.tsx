import { useEffect, useState } from 'react';
import { Progress, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { upgradeProgress } from './progress';

const TICK_MS = 500;

/**
 * SPEC 2 upgrading page shell: progress toward 99 % and 'do not refresh'. The status polling
 * (from 2 s on), the success reload and the failure tips arrive with the upgrade issue, whose
 * /api/upgrade calls do not exist yet.
 */
export default function UpgradingPage() {
  const { t } = useTranslation();
  const [percent, setPercent] = useState(0);

  useEffect(() => {
    const started = Date.now();
    const timer = setInterval(() => setPercent(upgradeProgress(Date.now() - started)), TICK_MS);
    return () => clearInterval(timer);
  }, []);

  return (
    <div
      data-testid="upgrading-page"
      style={{
        minHeight: '100%',
        display: 'flex',
        flexDirection: 'column',
        alignItems: 'center',
        justifyContent: 'center',
        gap: 16,
        padding: 24,
        textAlign: 'center',
      }}
    >
      <Typography.Title level={3}>{t('upgrading.title')}</Typography.Title>
      <Progress type="circle" percent={percent} data-testid="upgrading-progress" />
      <Typography.Text type="warning">{t('upgrading.doNotRefresh')}</Typography.Text>
    </div>
  );
}
