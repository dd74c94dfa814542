import { theme } from 'antd';
import { useTranslation } from 'react-i18next';
import type { I18nKey } from '../../i18n/keys';
import type { StreamInfo } from '../../lib/stream-types';
import { KeyboardStatus, MouseStatus } from '../input/HidStatus';
import type { StreamStatus } from '../video/stream-status';
import { useStreamStatus, useVideo } from '../video/video-session';

interface StatusItem {
  id: 'volume' | 'microphone' | 'camera';
  label: I18nKey;
  value: I18nKey;
}

/**
 * SPEC 2 status bar. Mouse and keyboard report the HID state (HidStatus); the audio and camera
 * subsystems arrive with later issues; until they report, their slots say the state is unknown.
 */
const ITEMS: readonly StatusItem[] = [
  { id: 'volume', label: 'status.volume', value: 'status.unknown' },
  { id: 'microphone', label: 'status.microphone', value: 'status.unknown' },
  { id: 'camera', label: 'status.camera', value: 'status.unknown' },
];

const STREAM_STATUS_TEXT: Record<StreamStatus, I18nKey> = {
  active: 'status.active',
  inactive: 'status.inactive',
  noSignal: 'status.noSignal',
  reconnecting: 'status.reconnecting',
};

const CONNECTION_TEXT: Record<NonNullable<StreamInfo['connection']>, I18nKey> = {
  relay: 'video.info.relay',
  p2p: 'video.info.p2p',
  direct: 'video.info.direct',
};

/** SPEC 3 stream info: bitrate, frames per second, connection type (relay or p2p). */
function StreamInfoText({ info }: { info: StreamInfo }) {
  const { t } = useTranslation();
  const bitrate =
    info.bitrateKbps >= 1000
      ? t('video.info.mbps', { value: (info.bitrateKbps / 1000).toFixed(1) })
      : t('video.info.kbps', { value: info.bitrateKbps });
  const parts = [bitrate, t('video.info.fps', { value: info.fps })];
  if (info.connection) parts.push(t(CONNECTION_TEXT[info.connection]));
  return <span data-testid="status-stream-info">{parts.join(' · ')}</span>;
}

export function StatusBar() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const streamStatus = useStreamStatus();
  const { info, state } = useVideo();
  return (
    <footer
      data-testid="status-bar"
      style={{
        display: 'flex',
        flexWrap: 'wrap',
        gap: 16,
        alignItems: 'center',
        minHeight: 28,
        padding: '2px 12px',
        fontSize: token.fontSizeSM,
        color: token.colorTextSecondary,
        background: token.colorBgContainer,
        borderTop: `1px solid ${token.colorBorderSecondary}`,
        flex: 'none',
      }}
    >
      <span data-testid="status-stream" data-status={streamStatus}>
        {t('status.stream')}: {t(STREAM_STATUS_TEXT[streamStatus])}
      </span>
      {state === 'active' && <StreamInfoText info={info} />}
      <MouseStatus />
      <KeyboardStatus />
      {ITEMS.map((item) => (
        <span key={item.id} data-testid={`status-${item.id}`}>
          {t(item.label)}: {t(item.value)}
        </span>
      ))}
    </footer>
  );
}
