import { Button, Space, Tooltip, Typography } from 'antd';
import { DisconnectOutlined, LinkOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { setPartitionConnected } from './msd-store';
import { Section } from './Section';
import type { MsdActions } from './use-msd-action';

/** The storage partition as a second USB drive: connect, disconnect, format (confirmed). */
export function PartitionSection(props: {
  actions: MsdActions;
  partitionConnected: boolean;
  /** An image is mounted: the partition cannot be formatted under it. */
  driveConnected: boolean;
  locked: boolean;
  transferring: boolean;
  onFormat: () => void;
}) {
  const { t } = useTranslation();
  const { actions, partitionConnected, driveConnected } = props;

  const toggle = () =>
    actions.run('partition', () => setPartitionConnected(!partitionConnected), {
      failure: t('storage.actionFailed'),
      success: t(
        partitionConnected ? 'storage.partition.disconnected' : 'storage.partition.connected',
      ),
    });

  return (
    <Section title={t('storage.partition.title')}>
      <Typography.Paragraph type="secondary" style={{ fontSize: 12, marginBottom: 8 }}>
        {t('storage.partition.hint')}
      </Typography.Paragraph>
      <Space wrap>
        <Button
          icon={partitionConnected ? <DisconnectOutlined /> : <LinkOutlined />}
          loading={actions.busy === 'partition'}
          disabled={props.locked}
          onClick={() => void toggle()}
          data-testid="msd-partition-connect"
          data-connected={partitionConnected ? 'true' : 'false'}
        >
          {t(partitionConnected ? 'storage.partition.disconnect' : 'storage.partition.connect')}
        </Button>
        <Tooltip
          title={
            driveConnected || partitionConnected ? t('storage.partition.formatLocked') : undefined
          }
        >
          <Button
            danger
            loading={actions.busy === 'format'}
            disabled={props.locked || driveConnected || partitionConnected || props.transferring}
            onClick={props.onFormat}
            data-testid="msd-partition-format"
          >
            {t('storage.partition.format')}
          </Button>
        </Tooltip>
      </Space>
    </Section>
  );
}
