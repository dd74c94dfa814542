import { useState } from 'react';
import { Input, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { PlainModal } from '../../components/PlainModal';
import { ssidError, wifiKeyError } from './wifi-rules';
import type { WifiJoin } from './system-api';

export interface JoinTarget {
  /** Empty for "another network" (hidden SSID typed by hand). */
  ssid: string;
  secure: boolean;
  /** A saved network may join with its stored key. */
  saved: boolean;
}

/**
 * The join dialog: password for secure networks, SSID too for a hidden one. Rendered per target
 * (keyed by the caller), so every opening starts empty.
 */
export function WifiJoinDialog(props: {
  target: JoinTarget;
  onJoin: (join: WifiJoin) => Promise<boolean>;
  onClose: () => void;
}) {
  const { t } = useTranslation();
  const { target } = props;
  const [ssid, setSsid] = useState(target.ssid);
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);

  const hidden = target.ssid === '';
  // A hidden network's security is unknown: a key is optional there, checked when given.
  const keyNeeded = target.secure && !target.saved;

  const beforeOk = async (): Promise<boolean> => {
    const problem =
      (hidden ? ssidError(ssid) : null) ??
      wifiKeyError(key, keyNeeded || (hidden && key.length > 0));
    if (problem) {
      setError(t(problem));
      return false;
    }
    setError(null);
    const join: WifiJoin = { ssid: hidden ? ssid : target.ssid };
    if (key) join.key = key;
    if (hidden) join.hidden = true;
    return props.onJoin(join);
  };

  return (
    <PlainModal
      open
      title={hidden ? t('settings.wifi.joinOther') : t('settings.wifi.joinTitle', { ssid })}
      okText={t('settings.wifi.join')}
      okTestId="wifi-join"
      beforeOk={beforeOk}
      onOk={props.onClose}
      onCancel={props.onClose}
    >
      {hidden && (
        <Input
          data-testid="wifi-ssid"
          placeholder={t('settings.wifi.ssid')}
          value={ssid}
          maxLength={64}
          onChange={(e) => setSsid(e.target.value)}
          style={{ marginBottom: 8 }}
        />
      )}
      {(target.secure || hidden) && (
        <Input.Password
          data-testid="wifi-password"
          placeholder={
            target.saved ? t('settings.wifi.passwordSaved') : t('settings.wifi.password')
          }
          value={key}
          maxLength={64}
          autoComplete="off"
          onChange={(e) => setKey(e.target.value)}
        />
      )}
      {error && (
        <Typography.Text type="danger" data-testid="wifi-join-error">
          {error}
        </Typography.Text>
      )}
    </PlainModal>
  );
}
