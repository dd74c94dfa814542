import { useSyncExternalStore, type ReactNode } from 'react';
import { Tooltip, theme } from 'antd';
import { AimOutlined, DesktopOutlined, StopOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import type { I18nKey } from '../../i18n/keys';
import { heartbeat } from '../connection/connection';
import { useConfig } from '../config/config-store';
import { deriveCaptureIndicator, type CaptureIndicatorState } from './capture-indicator';
import { useCapture, useHid } from './input-session';

const TEXT: Record<CaptureIndicatorState, I18nKey> = {
  free: 'input.state.free',
  'free-inactive': 'input.state.freeInactive',
  'free-offline': 'input.state.freeOffline',
  'captured-offline': 'input.state.capturedOffline',
  'captured-active': 'input.state.capturedActive',
  'captured-inactive': 'input.state.capturedInactive',
  disabled: 'input.state.disabled',
};

/** SPEC 4 capture indicator state of this console. */
export function useCaptureIndicator(): CaptureIndicatorState {
  const hid = useHid((s) => s.state);
  const focused = useCapture((s) => s.focused);
  const hovered = useCapture((s) => s.hovered);
  const locked = useCapture((s) => s.locked);
  const keyboardControl = useConfig((s) => s.config?.keyboard_control ?? true);
  const mouseControl = useConfig((s) => s.config?.mouse_control ?? true);
  const heartbeatState = useSyncExternalStore(heartbeat.subscribe, heartbeat.getState);
  return deriveCaptureIndicator({
    hid,
    connected: heartbeatState !== 'lost' && heartbeatState !== 'denied',
    focused,
    hovered,
    locked,
    keyboardControl,
    mouseControl,
  });
}

/** Toolbar item: an icon for free / captured / off, coloured by the HID state; text on hover. */
export function CaptureIndicator() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const state = useCaptureIndicator();
  const text = t(TEXT[state]);
  let icon: ReactNode;
  let color: string;
  if (state === 'disabled') {
    icon = <StopOutlined />;
    color = token.colorTextDisabled;
  } else {
    icon = state.startsWith('captured') ? <AimOutlined /> : <DesktopOutlined />;
    color = state.endsWith('offline')
      ? token.colorError
      : state.endsWith('inactive')
        ? token.colorWarning
        : state === 'captured-active'
          ? token.colorSuccess
          : token.colorTextSecondary;
  }
  return (
    <Tooltip title={text} placement="bottom">
      <span
        data-testid="capture-indicator"
        data-state={state}
        role="status"
        aria-label={`${t('input.indicator')}: ${text}`}
        style={{
          display: 'inline-flex',
          alignItems: 'center',
          justifyContent: 'center',
          width: 32,
          height: 32,
          fontSize: 16,
          color,
        }}
      >
        {icon}
      </span>
    </Tooltip>
  );
}
