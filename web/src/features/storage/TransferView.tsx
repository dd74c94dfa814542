import { Button, Progress, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { formatBytes, formatDuration } from './format';
import type { TransferSnapshot } from './upload';

/** Progress of an upload or URL download: bar, percent, speed, time left, cancel. */
export function TransferView(props: {
  snapshot: TransferSnapshot;
  testId: string;
  cancelTestId: string;
  onCancel: () => void;
  onDismiss: () => void;
}) {
  const { t } = useTranslation();
  const { snapshot } = props;
  if (snapshot.phase === 'idle') return null;
  const running = snapshot.phase === 'running';
  const status =
    snapshot.phase === 'done' ? 'success' : running ? 'active' : ('exception' as const);
  const facts = [`${snapshot.percent}%`];
  if (running && snapshot.speed > 0) {
    facts.push(t('storage.upload.speed', { speed: formatBytes(snapshot.speed) }));
  }
  if (running && snapshot.remainingS !== null) {
    facts.push(t('storage.upload.remaining', { time: formatDuration(snapshot.remainingS) }));
  }
  return (
    <div
      data-testid={props.testId}
      data-phase={snapshot.phase}
      data-percent={snapshot.percent}
      style={{ marginTop: 8 }}
    >
      <Typography.Text ellipsis style={{ display: 'block' }} title={snapshot.name}>
        {snapshot.name}
      </Typography.Text>
      <Progress percent={snapshot.percent} status={status} showInfo={false} size="small" />
      <div style={{ display: 'flex', alignItems: 'center', gap: 8 }}>
        <Typography.Text type="secondary" style={{ flex: 1, fontSize: 12 }}>
          {facts.join(' · ')}
        </Typography.Text>
        {running ? (
          <Button size="small" onClick={props.onCancel} data-testid={props.cancelTestId}>
            {t('storage.upload.cancel')}
          </Button>
        ) : (
          <Button size="small" type="text" onClick={props.onDismiss}>
            {t('storage.upload.dismiss')}
          </Button>
        )}
      </div>
    </div>
  );
}
