import { useEffect, useState } from 'react';
import { Button, Space, Spin, Switch, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useStore } from 'zustand';
import type { WifiAdapterLabelCode, WifiState as WifiWireState } from '@kvm/protocol/system';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { errorMessage } from '../../lib/api';
import { PendingChangeBanner } from '../system/PendingChangeBanner';
import type { WifiJoin } from '../system/system-api';
import { WifiJoinDialog, type JoinTarget } from '../system/WifiJoinDialog';
import { joinFailureReason } from '../system/wifi-rules';
import { WifiNetworkRow } from '../system/WifiNetworkRow';
import { createWifiStore } from '../system/wifi-store';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';

const STATE_TEXT: Record<WifiWireState, I18nKey> = {
  [-1]: 'settings.wifi.stateInit',
  0: 'settings.wifi.stateIdle',
  1: 'settings.wifi.stateConnecting',
  2: 'settings.wifi.stateConnected',
  3: 'settings.wifi.stateFailed',
  4: 'settings.wifi.stateConnected',
};

/** SPEC 2 settings: Wi-Fi (scan, known and available networks, join, disconnect, forget). */
/** The server's label codes (protocol/system.ts) as texts of this console. */
const ADAPTER_LABEL_TEXT: Record<WifiAdapterLabelCode, I18nKey> = {
  test_radio: 'settings.wifi.adapterLabel.test_radio',
  no_adapter: 'settings.wifi.adapterLabel.no_adapter',
};

export default function WifiGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const [store] = useState(createWifiStore);
  const state = useStore(store);
  const [target, setTarget] = useState<JoinTarget | null>(null);
  useEffect(() => {
    void store.refresh();
    return () => store.dispose();
  }, [store]);

  const fail = (err: unknown) => void message.error(errorMessage(err, t('common.settingFailed')));
  const run = (work: Promise<unknown>) => void work.catch(fail);

  /** The dialog closes once the device answered; a failure says why in the toast. */
  const join = async (request: WifiJoin): Promise<boolean> => {
    try {
      const result = await store.join(request);
      if (result.result === 'success') {
        if (!result.pending) void message.success(t('settings.wifi.joined'));
        return true;
      }
      const reason = joinFailureReason(result);
      // SPEC 8: 'Wi-Fi join failed', with the reason when the device gives one.
      void message.error(
        reason ? `${t('settings.wifi.joinFailed')}: ${t(reason)}` : t('settings.wifi.joinFailed'),
      );
      return true;
    } catch (err) {
      void message.error(errorMessage(err, t('settings.wifi.joinFailed')));
      return false;
    }
  };

  const status = state.status;
  const noAdapter = status?.adapter === 'none';
  const enabled = status?.enabled ?? false;
  const busy = state.operation !== null;
  const usable = !!status && !noAdapter && enabled;
  const connected = status && (status.state === 2 || status.state === 4) ? status.ssid : null;
  const savedNames = new Set(state.saved.map((s) => s.ssid));
  const scanned = new Map((state.networks ?? []).map((n) => [n.ssid, n]));

  return (
    <SettingsGroup title={t('settings.wifi.title')} testId="settings-group-wifi">
      {state.loadFailed && !status && (
        <Typography.Text type="danger">{t('settings.system.loadFailed')}</Typography.Text>
      )}
      {status && (
        <Field label={t('settings.wifi.adapter')}>
          <Space style={{ width: '100%', justifyContent: 'space-between' }}>
            <Typography.Text
              data-testid="wifi-status"
              data-adapter={status.adapter}
              data-state={status.state}
              data-ssid={connected ?? ''}
            >
              <span data-testid="wifi-adapter" data-label-code={status.adapter_label_code ?? ''}>
                {status.adapter_label_code
                  ? t(ADAPTER_LABEL_TEXT[status.adapter_label_code])
                  : status.adapter_label}
              </span>
              {!noAdapter && (
                <>
                  {' · '}
                  {connected
                    ? t('settings.wifi.connectedTo', { ssid: connected })
                    : enabled
                      ? t(STATE_TEXT[status.state] ?? 'settings.wifi.stateIdle')
                      : t('settings.wifi.off')}
                </>
              )}
            </Typography.Text>
            <Switch
              data-testid="wifi-enable"
              checked={enabled}
              disabled={noAdapter || busy}
              onChange={(on) => run(store.enable(on))}
            />
          </Space>
          {connected && (
            <Button
              size="small"
              style={{ marginTop: 6 }}
              disabled={busy}
              loading={state.operation === 'disconnect'}
              onClick={() => run(store.disconnect())}
              data-testid="wifi-disconnect"
            >
              {t('settings.wifi.disconnect')}
            </Button>
          )}
        </Field>
      )}
      {state.pending && (
        <PendingChangeBanner
          pending={state.pending}
          busy={state.operation === 'confirm'}
          onConfirm={() => run(store.confirm())}
          onRevert={() => run(store.revert())}
          testIdPrefix="wifi"
        />
      )}
      {state.reverted && !state.pending && (
        <Typography.Paragraph type="warning" data-testid="wifi-reverted">
          {t('settings.pending.reverted')}
        </Typography.Paragraph>
      )}
      {status && !noAdapter && state.saved.length > 0 && (
        <Field label={t('settings.wifi.known')}>
          {state.saved.map((saved) => (
            <WifiNetworkRow
              key={saved.ssid}
              testId={`wifi-saved-${saved.ssid}`}
              network={{
                ...scanned.get(saved.ssid),
                ssid: saved.ssid,
                secure: saved.encryption !== 'none',
              }}
              disabled={!usable || busy}
              onJoin={
                saved.ssid === connected
                  ? undefined
                  : () =>
                      setTarget({
                        ssid: saved.ssid,
                        secure: saved.encryption !== 'none',
                        saved: true,
                      })
              }
              onForget={() => run(store.forget(saved.ssid))}
            />
          ))}
        </Field>
      )}
      {status && !noAdapter && (
        <Field label={t('settings.wifi.available')}>
          <Space style={{ marginBottom: 8 }}>
            <Button
              size="small"
              data-testid="wifi-scan"
              disabled={!usable || busy}
              loading={state.operation === 'scan'}
              onClick={() => run(store.scan())}
            >
              {t('settings.wifi.scan')}
            </Button>
            <Button
              size="small"
              type="link"
              data-testid="wifi-join-other"
              disabled={!usable || busy}
              onClick={() => setTarget({ ssid: '', secure: false, saved: false })}
            >
              {t('settings.wifi.joinOther')}
            </Button>
          </Space>
          <Spin spinning={state.operation === 'scan'}>
            {state.networks?.length === 0 && (
              <Typography.Text type="secondary">{t('settings.wifi.noneFound')}</Typography.Text>
            )}
            {state.networks
              ?.filter((n) => !savedNames.has(n.ssid) && n.ssid !== connected)
              .map((network) => (
                <WifiNetworkRow
                  key={network.ssid}
                  testId={`wifi-network-${network.ssid}`}
                  network={network}
                  disabled={!usable || busy}
                  onJoin={() =>
                    setTarget({ ssid: network.ssid, secure: network.secure, saved: false })
                  }
                />
              ))}
          </Spin>
        </Field>
      )}
      {target && (
        <WifiJoinDialog
          key={`${target.ssid}/${String(target.saved)}`}
          target={target}
          onJoin={join}
          onClose={() => setTarget(null)}
        />
      )}
    </SettingsGroup>
  );
}
