/**
 * The sound controls (issue 14), in the status bar and in the audio settings group: volume
 * (mute/unmute, level), microphone (enable flow, on/off, meter) and camera state. The logic is
 * in audio-store.ts; these only show and call. `testIdPrefix` keeps the ids unique when both
 * places show at once (the status bar's are the bare ones the e2e uses).
 */
import { useEffect, useState, type CSSProperties, type ReactNode } from 'react';
import { Button, Popover, Space, Tooltip, theme } from 'antd';
import {
  AudioMutedOutlined,
  ExclamationCircleFilled,
  AudioOutlined,
  MutedOutlined,
  SoundOutlined,
  VideoCameraOutlined,
} from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { CONFIRM_DIALOG_WIDTH } from '@kvm/protocol/constants';
import type { CameraRemoteState, CameraUnavailableCode } from '@kvm/protocol/audio';
import { useMessage } from '../../components/notify';
import { PlainModal } from '../../components/PlainModal';
import type { I18nKey } from '../../i18n/keys';
import { errorMessage } from '../../lib/api';
import { useConfig } from '../config/config-store';
import {
  closeMutedTip,
  micStatus,
  setCamOn,
  setMicOn,
  setVolume,
  showMutedTip,
  toggleSound,
  useAudio,
  volumeStatus,
  type MicStatus,
  type VolumeStatus,
} from './audio-store';
import { ensureAudioLoaded, micEnableFlow } from './audio-session';
import { enableMicrophone } from './mic-enable';

export interface ControlProps {
  testIdPrefix?: string;
}

const itemStyle: CSSProperties = { display: 'inline-flex', alignItems: 'center', gap: 4 };
/** Buttons as small as the status bar's text around them. */
const buttonStyle: CSSProperties = { fontSize: 'inherit', height: 22, padding: '0 4px' };

/** A tooltip around a control that may be disabled (antd needs a wrapper for those). */
function Tip({ title, children }: { title: ReactNode; children: ReactNode }) {
  if (!title) return <>{children}</>;
  return (
    <Tooltip title={title}>
      <span style={itemStyle}>{children}</span>
    </Tooltip>
  );
}

function useVolumeText(status: VolumeStatus): { text: string; tip: string | null } {
  const { t } = useTranslation();
  const fallback = useAudio((s) => s.fallback);
  switch (status) {
    case 'direct':
      // The setting says WebRTC: the fallback cost the sound until WebRTC is back.
      return { text: t('audio.none'), tip: t(fallback ? 'audio.directFallback' : 'audio.direct') };
    case 'unavailable':
      return { text: t('audio.none'), tip: t('audio.unavailable') };
    case 'muted':
      return { text: t('audio.muted'), tip: t('audio.unmute') };
    case 'blocked':
      return { text: t('audio.blocked'), tip: t('audio.blockedTip') };
    case 'on':
      return { text: t('audio.on'), tip: t('audio.mute') };
    default:
      return { text: t('status.unknown'), tip: null };
  }
}

export function VolumeControl({ testIdPrefix = '' }: ControlProps) {
  const { t } = useTranslation();
  const gotTip = useConfig((s) => s.config?.got_muted_panel_tip);
  // Field by field: the meter's 10 updates a second must not redraw this.
  const status = useAudio(volumeStatus);
  const muted = useAudio((s) => s.muted);
  const volume = useAudio((s) => s.volume);
  const simulated = useAudio((s) => s.device?.simulated === true);
  const mutedTip = useAudio((s) => showMutedTip(s, gotTip));
  useEffect(ensureAudioLoaded, []);
  const { text, tip } = useVolumeText(status);
  const off = status === 'direct' || status === 'unavailable';
  const silent = status === 'muted' || status === 'blocked' || off;
  // The tip belongs to the status bar's control only (shown once per user).
  const tipOpen = testIdPrefix === '' && mutedTip;
  const button = (
    <Button
      size="small"
      type="text"
      style={buttonStyle}
      data-testid={`${testIdPrefix}audio-volume`}
      data-state={status}
      aria-label={tip ?? t('status.volume')}
      aria-pressed={muted}
      disabled={off}
      icon={silent ? <MutedOutlined /> : <SoundOutlined />}
      onClick={toggleSound}
    >
      {t('status.volume')}: {text}
      {simulated && !off ? ` (${t('audio.simulated')})` : ''}
    </Button>
  );
  return (
    <span style={itemStyle} data-testid={`${testIdPrefix}audio-volume-control`}>
      <Popover
        open={tipOpen}
        placement="topLeft"
        content={
          <div data-testid="audio-muted-tip" style={{ maxWidth: 260 }}>
            <div style={{ marginBottom: 8 }}>{t('audio.mutedTip')}</div>
            <Button size="small" type="primary" onClick={closeMutedTip}>
              {t('audio.gotIt')}
            </Button>
          </div>
        }
      >
        <Tip title={tipOpen ? null : tip}>{button}</Tip>
      </Popover>
      <input
        type="range"
        min={0}
        max={100}
        step={1}
        data-testid={`${testIdPrefix}audio-level`}
        aria-label={t('audio.level')}
        disabled={off}
        value={Math.round(volume * 100)}
        onChange={(e) => setVolume(Number(e.currentTarget.value) / 100)}
        style={{ width: 72 }}
      />
    </span>
  );
}

const MIC_TEXT: Record<MicStatus, I18nKey> = {
  unknown: 'status.unknown',
  direct: 'audio.none',
  unavailable: 'audio.mic.unavailable',
  disabled: 'audio.mic.disabled',
  enabling: 'audio.mic.enabling',
  off: 'audio.mic.off',
  starting: 'audio.mic.starting',
  on: 'audio.mic.on',
  denied: 'audio.mic.denied',
  noDevice: 'audio.mic.noDevice',
  unsupported: 'audio.mic.unsupported',
  failed: 'audio.mic.failed',
};

/** SPEC 9 meter: a bar, data-level 0..1 (rounded to 0.01); 0 while muted. */
function MicMeterBar({ testId }: { testId: string }) {
  const { token } = theme.useToken();
  const level = useAudio((s) => (s.muted ? 0 : s.micLevel));
  const shown = Math.round(Math.min(1, Math.max(0, level)) * 100) / 100;
  return (
    <span
      data-testid={testId}
      data-level={shown}
      role="meter"
      aria-valuemin={0}
      aria-valuemax={1}
      aria-valuenow={shown}
      style={{
        display: 'inline-block',
        width: 40,
        height: 6,
        borderRadius: 3,
        background: token.colorFillSecondary,
        overflow: 'hidden',
      }}
    >
      <span
        style={{
          display: 'block',
          height: '100%',
          width: `${shown * 100}%`,
          background: token.colorSuccess,
          transition: 'width 90ms linear',
        }}
      />
    </span>
  );
}

export function MicControl({ testIdPrefix = '' }: ControlProps) {
  const { t } = useTranslation();
  const message = useMessage();
  const status = useAudio(micStatus);
  const muted = useAudio((s) => s.muted);
  const fallback = useAudio((s) => s.fallback);
  const [confirming, setConfirming] = useState(false);
  useEffect(ensureAudioLoaded, []);
  const tips: Partial<Record<MicStatus, string>> = {
    direct: t(fallback ? 'audio.directFallback' : 'audio.mic.direct'),
    unavailable: t('audio.mic.unavailableTip'),
    disabled: t('audio.mic.enableTip'),
    off: t('audio.mic.turnOn'),
    on: muted ? t('audio.mic.mutedNote') : t('audio.mic.turnOff'),
    starting: t('audio.mic.turnOff'),
  };
  const inert = status === 'unknown' || status === 'direct' || status === 'unavailable';
  const click = () => {
    if (status === 'disabled') setConfirming(true);
    else if (status === 'on' || status === 'starting') setMicOn(false);
    else setMicOn(true); // off, or an error: try again
  };
  const live = status === 'on' && !muted;
  const isError =
    status === 'denied' || status === 'noDevice' || status === 'unsupported' || status === 'failed';
  return (
    <span style={itemStyle}>
      <Tip title={tips[status] ?? null}>
        <Button
          size="small"
          type="text"
          style={buttonStyle}
          danger={isError}
          data-testid={`${testIdPrefix}audio-mic`}
          data-state={status}
          aria-pressed={status === 'on' || status === 'starting'}
          disabled={inert || status === 'enabling'}
          loading={status === 'enabling'}
          icon={live ? <AudioOutlined /> : <AudioMutedOutlined />}
          onClick={click}
        >
          {t('status.microphone')}: {t(MIC_TEXT[status])}
          {status === 'disabled' ? ` · ${t('audio.mic.enable')}` : ''}
        </Button>
      </Tip>
      {status === 'on' && (
        <Tooltip title={t('audio.mic.meter')}>
          <MicMeterBar testId={`${testIdPrefix}audio-mic-meter`} />
        </Tooltip>
      )}
      {/* SPEC 2's confirm dialog (as ConfirmDialog), with the OK id the e2e clicks. */}
      <PlainModal
        open={confirming}
        width={CONFIRM_DIALOG_WIDTH}
        danger
        title={
          <Space>
            <ExclamationCircleFilled style={{ color: 'var(--ant-color-warning, #faad14)' }} />
            {t('common.caution')}
          </Space>
        }
        okText={t('audio.mic.enable')}
        okTestId={`${testIdPrefix}audio-mic-enable-confirm`}
        cancelTestId={`${testIdPrefix}audio-mic-enable-cancel`}
        onCancel={() => setConfirming(false)}
        onOk={() => {
          setConfirming(false);
          // SPEC 4: set the param, restart, wait for the reconnection, then the toast.
          const flow = micEnableFlow();
          enableMicrophone(flow.deps)
            .then(
              () => void message.success(t('audio.mic.enabled')),
              (err: unknown) => void message.error(errorMessage(err, t('audio.mic.enableFailed'))),
            )
            .finally(flow.done);
        }}
      >
        {t('audio.mic.enableConfirm')}
      </PlainModal>
    </span>
  );
}

/** The server's camera codes (protocol/audio.ts) as texts of this console. */
const CAMERA_REASON_TEXT: Record<CameraUnavailableCode, I18nKey> = {
  no_camera_input: 'audio.camera.reason.no_camera_input',
  testbed: 'audio.camera.reason.testbed',
  needs_hardware: 'audio.camera.reason.needs_hardware',
  uvc_unavailable: 'audio.camera.reason.uvc_unavailable',
};

/** What the remote computer does with the webcam (AudioState.camera.remote) as texts. */
const CAMERA_REMOTE_TEXT: Record<CameraRemoteState, I18nKey> = {
  idle: 'audio.camera.remote.idle',
  streaming: 'audio.camera.remote.streaming',
  stalled: 'audio.camera.remote.stalled',
  restarting: 'audio.camera.remote.restarting',
};

export function CameraStatus({ testIdPrefix = '' }: ControlProps) {
  const { t } = useTranslation();
  const camera = useAudio((s) => s.device?.camera ?? null);
  const camOn = useAudio((s) => s.camOn);
  useEffect(ensureAudioLoaded, []);
  if (!camera) {
    return (
      <span data-testid={`${testIdPrefix}audio-camera`} data-state="unknown" style={itemStyle}>
        <VideoCameraOutlined /> {t('status.camera')}: {t('audio.camera.unknown')}
      </span>
    );
  }
  if (!camera.available) {
    // No capture is attempted: the reason says what it needs (e.g. the hardware target). The
    // server's code is translated; an older server's English text is shown as it is.
    const reason = camera.code ? t(CAMERA_REASON_TEXT[camera.code]) : camera.reason;
    return (
      <Tooltip title={reason ?? t('audio.camera.unavailable')}>
        <span
          data-testid={`${testIdPrefix}audio-camera`}
          data-state="unavailable"
          data-reason={camera.reason ?? ''}
          data-reason-code={camera.code ?? ''}
          style={itemStyle}
        >
          <VideoCameraOutlined /> {t('status.camera')}: {t('audio.camera.unavailable')}
          {/* The status bar keeps it short: the reason is in the tooltip there. */}
          {testIdPrefix !== '' && reason ? ` (${reason})` : ''}
        </span>
      </Tooltip>
    );
  }
  // what the remote computer sees of the webcam (the gadget target says it; others do not)
  const remote = camera.remote ? t(CAMERA_REMOTE_TEXT[camera.remote]) : null;
  return (
    <Tooltip title={remote ? `${t('audio.camera.toggle')}. ${remote}` : t('audio.camera.toggle')}>
      <Button
        size="small"
        type="text"
        style={buttonStyle}
        data-testid={`${testIdPrefix}audio-camera`}
        data-state={camOn ? 'on' : 'off'}
        data-remote={camera.remote ?? ''}
        aria-pressed={camOn}
        icon={<VideoCameraOutlined />}
        onClick={() => setCamOn(!camOn)}
      >
        {t('status.camera')}: {camOn ? t('audio.camera.on') : t('audio.camera.off')}
        {testIdPrefix !== '' && remote ? ` (${remote})` : ''}
      </Button>
    </Tooltip>
  );
}
