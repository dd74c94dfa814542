import { useEffect, useState } from 'react';
import { Alert, Button, Input, Radio, Space, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { useStore } from 'zustand';
import {
  isValidHostname,
  networkFormErrors,
  type NetworkForm,
  type NetworkFormError,
  type NetworkFormField,
} from '@kvm/protocol/network';
import type { NetworkConfigWire, NetworkMode } from '@kvm/protocol/system';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { errorMessage } from '../../lib/api';
import { createNetworkStore } from '../system/network-store';
import { NetworkStateView } from '../system/NetworkStateView';
import { PendingChangeBanner } from '../system/PendingChangeBanner';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';

type Form = Required<NetworkForm> & { mode: NetworkMode };

/** The form's fields: wire name, test id, label. */
const FIELDS: readonly [Exclude<NetworkFormField, 'mode'>, string, I18nKey][] = [
  ['ip_address', 'network-ip', 'settings.network.ip'],
  ['netmask', 'network-netmask', 'settings.network.netmask'],
  ['gateway', 'network-gateway', 'settings.network.gateway'],
  ['dns_server1', 'network-dns1', 'settings.network.dns1'],
  ['dns_server2', 'network-dns2', 'settings.network.dns2'],
];

function formOf(config: NetworkConfigWire): Form {
  // DNS shown only when configured: empty fields mean "the DHCP server's" in DHCP mode.
  const dns = config.dns_manual || !config.is_dhcp ? config.dns_servers : [];
  return {
    mode: config.is_dhcp ? 'dhcp' : 'static',
    ip_address: config.ip_address,
    netmask: config.netmask,
    gateway: config.gateway,
    dns_server1: dns[0] ?? '',
    dns_server2: dns[1] ?? '',
  };
}

/** SPEC 5 messages naming the field, translated from the shared rule's code. */
function useErrorText() {
  const { t } = useTranslation();
  return (error: NetworkFormError, form: Form): string => {
    const entry = FIELDS.find(([name]) => name === error.field);
    const field = entry ? t(entry[2]) : error.field;
    const value = error.field === 'mode' ? form.mode : form[error.field].trim();
    if (error.code === 'required') return t('settings.network.errRequired', { field });
    if (error.code === 'outside_subnet') return t('settings.network.errOutsideSubnet', { field });
    if (error.code === 'forbidden') {
      if (error.field === 'gateway' && value === form.ip_address.trim()) {
        return t('settings.network.errGatewaySelf');
      }
      return t('settings.network.errForbidden', { field, value });
    }
    if (error.field === 'netmask') return t('settings.network.errNetmask');
    return t('settings.network.errInvalid', { field });
  };
}

/** SPEC 2 settings: network (Ethernet state, DHCP or static, host name); changes are confirmed. */
export default function NetworkGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const errorText = useErrorText();
  const [store] = useState(createNetworkStore);
  const state = useStore(store);
  // The user's edits; until there are some, the form shows the device's settings.
  const [edits, setEdits] = useState<Form | null>(null);
  const [errors, setErrors] = useState<NetworkFormError[]>([]);
  const [hostname, setHostname] = useState<string | null>(null);
  const [hostnameError, setHostnameError] = useState(false);
  useEffect(() => {
    store.follow();
    return () => store.dispose();
  }, [store]);

  const config = state.config;
  const form = edits ?? (config ? formOf(config) : null);
  const dirty = edits !== null;

  const fail = (err: unknown) => void message.error(errorMessage(err, t('common.settingFailed')));
  const edit = (patch: Partial<Form>) => {
    if (!form) return;
    setEdits({ ...form, ...patch });
    setErrors([]);
  };

  const apply = () => {
    if (!form) return;
    const found = networkFormErrors(form);
    setErrors(found);
    if (found.length > 0) return;
    const dns = [form.dns_server1.trim(), form.dns_server2.trim()].filter(Boolean);
    const settings =
      form.mode === 'static'
        ? {
            mode: form.mode,
            ip_address: form.ip_address.trim(),
            netmask: form.netmask.trim(),
            gateway: form.gateway.trim(),
            dns_servers: dns,
          }
        : { mode: form.mode, dns_servers: dns };
    store.apply(settings).then(() => {
      setEdits(null);
      if (!store.getState().pending) void message.success(t('settings.network.applied'));
    }, fail);
  };

  const saveHostname = () => {
    const name = (hostname ?? '').trim();
    if (!isValidHostname(name)) {
      setHostnameError(true);
      return;
    }
    store.renameHost(name).then(() => {
      setHostname(null);
      void message.success(t('settings.network.hostnameSaved'));
    }, fail);
  };

  const disabled = !config?.available || state.busy;
  const errorOf = (field: NetworkFormField) => errors.find((e) => e.field === field);
  return (
    <SettingsGroup title={t('settings.network.title')} testId="settings-group-network">
      {state.loadFailed && !config && (
        <Typography.Text type="danger">{t('settings.system.loadFailed')}</Typography.Text>
      )}
      {config && !config.available && (
        <Alert
          type="info"
          showIcon
          data-testid="network-unavailable"
          style={{ marginBottom: 12 }}
          message={t('settings.network.unavailable')}
          description={config.unavailable_reason}
        />
      )}
      {state.pending && (
        <PendingChangeBanner
          pending={state.pending}
          busy={state.busy}
          onConfirm={() =>
            store.confirm().then(() => void message.success(t('settings.pending.kept')), fail)
          }
          onRevert={() => store.revert().catch(fail)}
          testIdPrefix="network"
        />
      )}
      {state.reverted && !state.pending && (
        <Typography.Paragraph type="warning" data-testid="network-reverted">
          {t('settings.pending.reverted')}
        </Typography.Paragraph>
      )}
      {config && <NetworkStateView config={config} />}
      {form && (
        <Field label={t('settings.network.mode')}>
          <Radio.Group
            data-testid="network-mode"
            data-value={form.mode}
            value={form.mode}
            disabled={disabled}
            onChange={(e) => edit({ mode: e.target.value as NetworkMode })}
          >
            <Radio value="dhcp" data-testid="network-mode-dhcp">
              {t('settings.network.dhcp')}
            </Radio>
            <Radio value="static" data-testid="network-mode-static">
              {t('settings.network.static')}
            </Radio>
          </Radio.Group>
          {FIELDS.filter(([name]) => form.mode === 'static' || name.startsWith('dns')).map(
            ([name, testId, label]) => {
              const error = errorOf(name);
              return (
                <div key={name} style={{ marginTop: 8 }}>
                  <Typography.Text type="secondary">{t(label)}</Typography.Text>
                  <Input
                    size="small"
                    data-testid={testId}
                    value={form[name]}
                    maxLength={15}
                    disabled={disabled}
                    status={error ? 'error' : undefined}
                    onChange={(e) => edit({ [name]: e.target.value })}
                  />
                  {error && (
                    <Typography.Text type="danger" data-testid={`${testId}-error`}>
                      {errorText(error, form)}
                    </Typography.Text>
                  )}
                </div>
              );
            },
          )}
          <Button
            type="primary"
            size="small"
            style={{ marginTop: 8 }}
            disabled={disabled || !dirty}
            loading={state.busy}
            onClick={apply}
            data-testid="network-apply"
          >
            {t('settings.network.apply')}
          </Button>
        </Field>
      )}
      {config && (
        <Field label={t('settings.network.hostname')}>
          <Space.Compact style={{ width: '100%' }}>
            <Input
              size="small"
              data-testid="network-hostname"
              value={hostname ?? config.hostname}
              maxLength={63}
              disabled={disabled}
              status={hostnameError ? 'error' : undefined}
              onChange={(e) => {
                setHostname(e.target.value);
                setHostnameError(false);
              }}
            />
            <Button
              size="small"
              disabled={disabled || hostname === null}
              onClick={saveHostname}
              data-testid="network-hostname-save"
            >
              {t('settings.network.hostnameSave')}
            </Button>
          </Space.Compact>
          {hostnameError && (
            <Typography.Text type="danger" data-testid="network-hostname-error">
              {t('settings.network.hostnameInvalid')}
            </Typography.Text>
          )}
        </Field>
      )}
    </SettingsGroup>
  );
}
