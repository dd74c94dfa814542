import { useCallback, useEffect, useState } from 'react';
import { Alert, Button, Card, Checkbox, Input, Space, Tag, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { APP_STATUS_POLL_MS, type AppSummary } from '@kvm/protocol/apps';
import { withDetail } from '../../lib/api';
import { normalizeNwid, type ZerotierNetwork } from '@kvm/protocol/zerotier';
import { zerotierJoin, zerotierLeave, zerotierNetworks, zerotierSet } from './apps-api';
import { loadApps } from './apps-store';
import { usePoll } from './app-text';
import { UnbindButton } from './UnbindButton';

function NetworkStatus({ network }: { network: ZerotierNetwork }) {
  const { t } = useTranslation();
  const [color, text] =
    network.status === 'OK'
      ? ['success', t('apps.zerotier.status.ok')]
      : network.status === 'ACCESS_DENIED'
        ? ['warning', t('apps.zerotier.status.waitingAuth')]
        : network.status === 'REQUESTING_CONFIGURATION'
          ? ['processing', t('apps.zerotier.status.requesting')]
          : network.status === 'NOT_FOUND'
            ? ['error', t('apps.zerotier.status.notFound')]
            : ['error', network.status];
  return (
    <Tag color={color} data-testid={`zerotier-status-${network.nwid}`} data-status={network.status}>
      {text}
    </Tag>
  );
}

/**
 * ZeroTier (`/api/zerotier/*`): join a network by its 16-hex id (allow default route / global
 * addresses), its status (including "waiting for authorisation on the controller"), leave.
 */
export function ZerotierPanel({ app }: { app: AppSummary }) {
  const { t } = useTranslation();
  const [networks, setNetworks] = useState<ZerotierNetwork[]>([]);
  const [networkId, setNetworkId] = useState('');
  const [allowDefault, setAllowDefault] = useState(false);
  const [allowGlobal, setAllowGlobal] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const refresh = useCallback(async () => {
    if (!app.running) return;
    setNetworks(await zerotierNetworks());
  }, [app.running]);
  useEffect(() => {
    if (!app.running) return;
    zerotierNetworks().then(setNetworks, () => undefined);
  }, [app.running]);
  usePoll(refresh, APP_STATUS_POLL_MS, app.running);

  const join = async () => {
    const id = normalizeNwid(networkId.trim());
    if (id === null) {
      setError(t('apps.zerotier.badId'));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await zerotierJoin(id, allowDefault, allowGlobal);
      setNetworkId('');
      await refresh();
      await loadApps().catch(() => undefined);
    } catch (err) {
      setError(withDetail(t('apps.actionFailed'), err));
    } finally {
      setBusy(false);
    }
  };

  const change = async (nwid: string, settings: Parameters<typeof zerotierSet>[1]) => {
    setError(null);
    try {
      await zerotierSet(nwid, settings);
      await refresh();
    } catch (err) {
      setError(withDetail(t('apps.actionFailed'), err));
    }
  };

  if (!app.running) return null;
  return (
    <div data-testid="zerotier-panel">
      <Space orientation="vertical" style={{ width: '100%' }}>
        <Typography.Text>{t('apps.zerotier.networkId')}</Typography.Text>
        <Input
          value={networkId}
          maxLength={16}
          placeholder="8056c2e21c000001"
          onChange={(e) => setNetworkId(e.target.value)}
          data-testid="zerotier-network-id"
        />
        <Checkbox
          checked={allowDefault}
          onChange={(e) => setAllowDefault(e.target.checked)}
          data-testid="zerotier-allow-default"
        >
          {t('apps.zerotier.allowDefault')}
        </Checkbox>
        <Checkbox
          checked={allowGlobal}
          onChange={(e) => setAllowGlobal(e.target.checked)}
          data-testid="zerotier-allow-global"
        >
          {t('apps.zerotier.allowGlobal')}
        </Checkbox>
        <Button
          type="primary"
          loading={busy}
          onClick={() => void join()}
          data-testid="zerotier-join"
        >
          {t('apps.zerotier.join')}
        </Button>
        {error && (
          <Alert type="error" showIcon title={<span data-testid="zerotier-error">{error}</span>} />
        )}
        {networks.length === 0 && (
          <Typography.Text type="secondary" data-testid="zerotier-none">
            {t('apps.zerotier.none')}
          </Typography.Text>
        )}
        {networks.map((network) => (
          <Card
            key={network.nwid}
            size="small"
            data-testid={`zerotier-network-${network.nwid}`}
            title={<Typography.Text code>{network.nwid}</Typography.Text>}
            extra={<NetworkStatus network={network} />}
          >
            <Space orientation="vertical" size={4}>
              {network.name && <Typography.Text>{network.name}</Typography.Text>}
              {network.ips.length > 0 && (
                <Typography.Text type="secondary">{network.ips.join(', ')}</Typography.Text>
              )}
              <Checkbox
                checked={network.allow_default}
                onChange={(e) => void change(network.nwid, { allow_default: e.target.checked })}
                data-testid={`zerotier-allow-default-${network.nwid}`}
              >
                {t('apps.zerotier.allowDefault')}
              </Checkbox>
              <Checkbox
                checked={network.allow_global}
                onChange={(e) => void change(network.nwid, { allow_global: e.target.checked })}
                data-testid={`zerotier-allow-global-${network.nwid}`}
              >
                {t('apps.zerotier.allowGlobal')}
              </Checkbox>
              <UnbindButton
                name={`${app.name} ${network.nwid}`}
                text={t('apps.zerotier.leave')}
                testId={`zerotier-leave-${network.nwid}`}
                onUnbind={() => zerotierLeave(network.nwid)}
              />
            </Space>
          </Card>
        ))}
      </Space>
    </div>
  );
}
