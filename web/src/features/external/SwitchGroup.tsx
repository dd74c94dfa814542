import { useEffect, useState } from 'react';
import { Alert, Button, Flex, Tag, Typography } from 'antd';
import { ReloadOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { useStore } from 'zustand';
import { LoadingIcon } from '../../components/LoadingIcon';
import { useMessage } from '../../components/notify';
import { errorMessage } from '../../lib/api';
import { createSwitchStore } from './switch-store';

/**
 * The external devices' KVM switch (PiKVM Switch, `/api/switch`): with one attached, its ports,
 * the active one, and a click to switch; else "no KVM switch attached".
 */
export function SwitchGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const [store] = useState(createSwitchStore);
  const view = useStore(store, (s) => s.view);
  const switching = useStore(store, (s) => s.switching);

  useEffect(() => {
    void store.load();
    return () => store.dispose();
  }, [store]);

  const choose = async (port: number) => {
    try {
      await store.setActive(port);
    } catch (err) {
      void message.error(errorMessage(err, t('external.switchFailed')));
    }
  };

  if (view.status === 'loading') return <LoadingIcon size={16} />;
  if (view.status === 'none') {
    return (
      <Typography.Text type="secondary" data-testid="external-switch-none">
        {t('external.switchNone')}
      </Typography.Text>
    );
  }
  if (view.status === 'error') {
    return (
      <Alert
        type="error"
        showIcon
        title={
          <span data-testid="external-switch-error">
            {errorMessage(view.error, t('external.switchLoadFailed'))}
          </span>
        }
        action={
          <Button size="small" icon={<ReloadOutlined />} onClick={() => void store.load()}>
            {t('common.refresh')}
          </Button>
        }
      />
    );
  }
  return (
    <>
      {!view.synced && (
        <Typography.Paragraph type="secondary" data-testid="external-switch-syncing">
          {t('external.switchSyncing')}
        </Typography.Paragraph>
      )}
      <Flex vertical gap={4} role="list">
        {view.ports.map((port, index) => {
          const active = index === view.active;
          return (
            <Button
              key={port.id}
              role="listitem"
              type={active ? 'primary' : 'default'}
              aria-current={active ? 'true' : undefined}
              loading={switching === index}
              disabled={switching !== null}
              onClick={() => (active ? undefined : void choose(index))}
              style={{ justifyContent: 'flex-start' }}
              data-testid={`external-switch-port-${port.id}`}
              data-active={active ? 'true' : 'false'}
            >
              <span style={{ flex: 1, textAlign: 'left' }}>
                {t('external.switchPort', { id: port.id })}
                {port.name ? ` · ${port.name}` : ''}
              </span>
              {active && <Tag>{t('external.switchActive')}</Tag>}
              {port.video === false && <Tag>{t('external.switchNoSignal')}</Tag>}
            </Button>
          );
        })}
      </Flex>
    </>
  );
}
