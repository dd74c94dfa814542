import { useEffect, useState } from 'react';
import { Button, Descriptions } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { fingerbotBattery, fingerbotVersion } from './fingerbot-store';

/** Battery and firmware version, read when the panel opens and again on `refresh`. */
export function useFingerbotInfo() {
  const [battery, setBattery] = useState<number | null>(null);
  const [version, setVersion] = useState<string | null>(null);
  const refresh = () => {
    fingerbotBattery().then(setBattery, () => setBattery(null));
    fingerbotVersion().then(setVersion, () => setVersion(null));
  };
  useEffect(refresh, []);
  return { battery, version, refresh };
}

export function DeviceInfo({ battery, version, refresh }: ReturnType<typeof useFingerbotInfo>) {
  const { t } = useTranslation();
  return (
    <Descriptions
      column={1}
      size="small"
      extra={
        <Button
          type="text"
          size="small"
          icon={<ReloadOutlined />}
          aria-label={t('fingerbot.refresh')}
          onClick={refresh}
        />
      }
      items={[
        {
          key: 'battery',
          label: t('fingerbot.battery'),
          children: (
            <span data-testid="fingerbot-battery">{battery === null ? '—' : `${battery}%`}</span>
          ),
        },
        {
          key: 'version',
          label: t('fingerbot.version'),
          children: <span data-testid="fingerbot-version">{version ?? '—'}</span>,
        },
      ]}
    />
  );
}
