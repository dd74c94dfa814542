import { LockOutlined } from '@ant-design/icons';
import { Button, Typography, theme } from 'antd';
import { useTranslation } from 'react-i18next';
import type { WifiNetwork } from '@kvm/protocol/system';
import { signalBars } from './wifi-rules';

function SignalBars({ bars }: { bars: number }) {
  const { token } = theme.useToken();
  return (
    <span aria-label={`${bars}/4`} data-bars={bars} style={{ display: 'inline-flex', gap: 1 }}>
      {[1, 2, 3, 4].map((n) => (
        <span
          key={n}
          style={{
            width: 3,
            height: 3 + n * 3,
            alignSelf: 'flex-end',
            background: n <= bars ? token.colorText : token.colorBorder,
          }}
        />
      ))}
    </span>
  );
}

/** One network of the Wi-Fi lists: signal bars, name, lock, join and forget. */
export function WifiNetworkRow(props: {
  network: Pick<WifiNetwork, 'ssid' | 'secure'> & Partial<WifiNetwork>;
  testId: string;
  disabled: boolean;
  onJoin?: () => void;
  onForget?: () => void;
}) {
  const { t } = useTranslation();
  const { network } = props;
  return (
    <div
      data-testid={props.testId}
      // The whole row opens the join dialog; the button is there for the eye and the keyboard.
      onClick={props.disabled ? undefined : props.onJoin}
      style={{
        display: 'flex',
        alignItems: 'center',
        gap: 8,
        padding: '2px 0',
        cursor: props.onJoin && !props.disabled ? 'pointer' : undefined,
      }}
    >
      {network.signal !== undefined && (
        <SignalBars bars={signalBars(network.quality, network.signal)} />
      )}
      <Typography.Text ellipsis style={{ flex: 1 }}>
        {network.ssid}
      </Typography.Text>
      {network.secure && <LockOutlined aria-label={t('settings.wifi.secure')} />}
      {props.onJoin && (
        <Button
          size="small"
          type="link"
          disabled={props.disabled}
          onClick={(e) => {
            e.stopPropagation();
            props.onJoin?.();
          }}
          data-testid={`wifi-connect-${network.ssid}`}
        >
          {t('settings.wifi.join')}
        </Button>
      )}
      {props.onForget && (
        <Button
          size="small"
          type="link"
          danger
          disabled={props.disabled}
          onClick={(e) => {
            e.stopPropagation();
            props.onForget?.();
          }}
          data-testid={`wifi-forget-${network.ssid}`}
        >
          {t('settings.wifi.forget')}
        </Button>
      )}
    </div>
  );
}
