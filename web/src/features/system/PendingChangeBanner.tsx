import { useEffect, useState } from 'react';
import { Alert, Button, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { newAddressLink, secondsLeft, type TrackedPending } from './pending-change';

/** Rerenders every second until the deadline passes. */
function useSecondsLeft(pending: TrackedPending): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [pending]);
  return secondsLeft(pending, now);
}

/**
 * Issue 11, item 3: a network change is kept only if confirmed in time. Says where the console
 * is now reached, counts down, and offers to keep or revert.
 */
export function PendingChangeBanner(props: {
  pending: TrackedPending;
  busy: boolean;
  onConfirm: () => void;
  onRevert: () => void;
  /** `network` or `wifi`: prefixes the test ids. */
  testIdPrefix: string;
}) {
  const { t } = useTranslation();
  const seconds = useSecondsLeft(props.pending);
  const { change } = props.pending;
  const link = newAddressLink(change, window.location.host);
  const id = props.testIdPrefix;
  return (
    <Alert
      type="warning"
      showIcon
      data-testid={`${id}-pending`}
      style={{ marginBottom: 12 }}
      message={t('settings.pending.title')}
      description={
        <Space direction="vertical" size={6} style={{ width: '100%' }}>
          {change.new_address && (
            <Typography.Text data-testid={`${id}-new-address`}>
              {t('settings.pending.newAddress')}{' '}
              {link ? (
                <a href={link} target="_blank" rel="noreferrer">
                  {change.new_address}
                </a>
              ) : (
                <Typography.Text strong>{change.new_address}</Typography.Text>
              )}
            </Typography.Text>
          )}
          <Typography.Text>
            {t('settings.pending.countdown')}{' '}
            <Typography.Text strong data-testid={`${id}-countdown`} data-seconds={seconds}>
              {seconds}
            </Typography.Text>
          </Typography.Text>
          <Space wrap>
            <Button
              type="primary"
              size="small"
              loading={props.busy}
              onClick={props.onConfirm}
              data-testid={`${id}-confirm`}
            >
              {t('settings.pending.keep')}
            </Button>
            <Button
              size="small"
              disabled={props.busy}
              onClick={props.onRevert}
              data-testid={`${id}-revert`}
            >
              {t('settings.pending.revert')}
            </Button>
          </Space>
        </Space>
      }
    />
  );
}
