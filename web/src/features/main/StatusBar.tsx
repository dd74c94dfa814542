import { theme } from 'antd';
import { STATUS_BAR_MIN_HEIGHT } from '@kvm/protocol/constants';
import { useTranslation } from 'react-i18next';
import { GrowOnly } from '../../components/GrowOnly';
import type { I18nKey } from '../../i18n/keys';
import type { StreamInfo } from '../../lib/stream-types';
import { CameraStatus, MicControl, VolumeControl } from '../audio/AudioControls';
import { RemoteAudio } from '../audio/RemoteAudio';
import { KeyboardStatus, MouseStatus } from '../input/HidStatus';
import { CaptureStatus } from '../video/CaptureStatus';
import { LatencyStatus } from '../video/LatencyStatus';
import type { StreamStatus } from '../video/stream-status';
import { useStreamStatus, useVideoPart } from '../video/video-session';

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
export function StreamInfoText({ info }: { info: StreamInfo }) {
  const { t } = useTranslation();
  const bitrate =
    info.bitrateKbps >= 1000
      ? t('video.info.mbps', { value: (info.bitrateKbps / 1000).toFixed(1) })
      : t('video.info.kbps', { value: info.bitrateKbps });
  const parts = [bitrate, t('video.info.fps', { value: info.fps })];
  if (info.connection) parts.push(t(CONNECTION_TEXT[info.connection]));
  return <span data-testid="status-stream-info">{parts.join(' · ')}</span>;
}

/**
 * The live stream info, read here and not in the bar: it is new every second, and the bar
 * rendered all its ~46 components again with it (counted in Chromium: 46 a second, now 3).
 */
function LiveStreamInfo() {
  const info = useVideoPart((v) => v.info);
  return (
    <GrowOnly>
      <StreamInfoText info={info} />
    </GrowOnly>
  );
}

/**
 * SPEC 2 status bar: stream, mouse and keyboard (HidStatus), volume, microphone and camera
 * (features/audio).
 */
export function StatusBar() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const streamStatus = useStreamStatus();
  const state = useVideoPart((v) => v.state);
  return (
    <footer
      data-testid="status-bar"
      style={{
        display: 'flex',
        flexWrap: 'wrap',
        gap: 16,
        alignItems: 'center',
        minHeight: STATUS_BAR_MIN_HEIGHT,
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
      {state === 'active' && <LiveStreamInfo />}
      {state === 'active' && <LatencyStatus />}
      <CaptureStatus />
      <MouseStatus />
      <KeyboardStatus />
      {/* Issue 14: volume (mute, level, the muted tip), microphone (enable, on/off, meter), camera. */}
      <span data-testid="status-volume">
        <VolumeControl />
      </span>
      <span data-testid="status-microphone">
        <MicControl />
      </span>
      <span data-testid="status-camera">
        <CameraStatus />
      </span>
      {/* The sound plays apart from the muted <video> (autoplay rules); hidden. */}
      <RemoteAudio />
    </footer>
  );
}
