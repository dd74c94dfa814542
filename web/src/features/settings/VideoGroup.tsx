import { useState } from 'react';
import { Button, Input, Radio, Space, Spin, Switch, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import {
  ORIENTATIONS,
  STREAM_QUALITIES,
  VIDEO_MODES,
  VIDEO_PROCESSING,
  type Orientation,
  type StreamQuality,
  type VideoMode,
  type VideoProcessing,
} from '@kvm/protocol/enums';
import type { StreamerParams } from '@kvm/protocol/streamer';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { errorMessage } from '../../lib/api';
import { writeStorage } from '../../lib/storage';
import { changeStreamQuality, parseNonNegativeNumber, setStreamerParams } from '../video/quality';
import { useStreamer } from '../video/streamer-store';
import { saveConfig, useConfig } from '../config/config-store';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';
import { useSaveConfig } from './use-save-config';

const QUALITY_TEXT: Record<StreamQuality, I18nKey> = {
  LOW: 'settings.video.qualityLow',
  MEDIUM: 'settings.video.qualityMedium',
  HIGH: 'settings.video.qualityHigh',
  ULTRA_HIGH: 'settings.video.qualityUltraHigh',
};

const MODE_TEXT: Record<VideoMode, I18nKey> = {
  webrtc: 'settings.video.modeWebrtc',
  direct_h264: 'settings.video.modeDirect',
};

const PROCESSING_TEXT: Record<VideoProcessing, I18nKey> = {
  quality_first: 'settings.video.qualityFirst',
  low_latency_first: 'settings.video.lowLatencyFirst',
};

/**
 * SPEC 5 custom bitrate / frame rate: a non-negative number, applied with set_params (the
 * encoder takes whole numbers).
 */
function NumberParam(props: {
  label: string;
  testId: string;
  current: number | undefined;
  param: 'h264_bitrate' | 'desired_fps';
}) {
  const { t } = useTranslation();
  const message = useMessage();
  const [text, setText] = useState('');
  const [invalid, setInvalid] = useState(false);
  const [busy, setBusy] = useState(false);
  const apply = async () => {
    const value = parseNonNegativeNumber(text);
    setInvalid(value === null);
    if (value === null) return;
    setBusy(true);
    try {
      const patch: Partial<StreamerParams> = { [props.param]: Math.round(value) };
      await setStreamerParams(patch);
      setText('');
      void message.success(t('common.settingSuccess'));
    } catch (err) {
      void message.error(errorMessage(err, t('common.settingFailed')));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Field label={props.label}>
      <Space.Compact style={{ width: '100%' }}>
        <Input
          data-testid={props.testId}
          inputMode="decimal"
          value={text}
          placeholder={props.current === undefined ? undefined : String(props.current)}
          status={invalid ? 'error' : undefined}
          onChange={(e) => {
            setText(e.target.value);
            setInvalid(false);
          }}
          onPressEnter={() => void apply()}
        />
        <Button data-testid={`${props.testId}-apply`} loading={busy} onClick={() => void apply()}>
          {t('settings.video.apply')}
        </Button>
      </Space.Compact>
      {invalid && (
        <Typography.Text type="danger" data-testid={`${props.testId}-error`}>
          {t('settings.video.mustBeNonNegative')}
        </Typography.Text>
      )}
    </Field>
  );
}

/** SPEC 2 settings: video (quality, mode, processing, custom bitrate and fps, orientation, cursor). */
export function VideoGroup() {
  const { t } = useTranslation();
  const message = useMessage();
  const save = useSaveConfig();
  const config = useConfig((s) => s.config);
  // Primitives: the streamer state is replaced every second while the stream runs.
  const bitrate = useStreamer((s) => s.state?.params?.h264_bitrate);
  const fps = useStreamer((s) => s.state?.params?.desired_fps);
  const [pendingQuality, setPendingQuality] = useState<StreamQuality | null>(null);
  const quality = pendingQuality ?? config?.stream_quality ?? 'MEDIUM';
  const videoMode = config?.video_mode ?? 'webrtc';
  const processing = config?.video_processing ?? 'quality_first';
  const orientation = config?.orientation ?? 0;
  const showCursor = config?.show_cursor ?? true;

  // SPEC 4: set the preset, store it, then wait (spinner) for the stream to come back.
  const changeQuality = async (next: StreamQuality) => {
    setPendingQuality(next);
    try {
      await changeStreamQuality(next);
    } catch (err) {
      void message.error(errorMessage(err, t('common.settingFailed')));
    } finally {
      setPendingQuality(null);
    }
  };

  const changeProcessing = async (next: VideoProcessing) => {
    try {
      await setStreamerParams({ video_processing: next });
      await saveConfig({ video_processing: next });
    } catch (err) {
      void message.error(errorMessage(err, t('common.settingFailed')));
    }
  };

  const changeMode = (next: VideoMode) => {
    writeStorage(STORAGE_KEYS.videoMode, next);
    save({ video_mode: next });
  };

  const changeOrientation = (next: Orientation) => {
    writeStorage(STORAGE_KEYS.orientation, String(next));
    save({ orientation: next });
  };

  return (
    <SettingsGroup title={t('settings.video.title')} testId="settings-group-video">
      <Field
        label={
          <>
            {t('settings.video.quality')}
            {pendingQuality && (
              <span data-testid="quality-waiting" style={{ marginLeft: 8 }}>
                <Spin size="small" /> {t('settings.video.waiting')}
              </span>
            )}
          </>
        }
      >
        <Radio.Group
          value={quality}
          disabled={pendingQuality !== null}
          onChange={(e) => void changeQuality(e.target.value as StreamQuality)}
        >
          {STREAM_QUALITIES.map((q) => (
            <Radio key={q} value={q} data-testid={`quality-${q}`}>
              {t(QUALITY_TEXT[q])}
            </Radio>
          ))}
        </Radio.Group>
      </Field>
      <Field label={t('settings.video.mode')}>
        <Radio.Group value={videoMode} onChange={(e) => changeMode(e.target.value as VideoMode)}>
          {VIDEO_MODES.map((m) => (
            <Radio key={m} value={m} data-testid={`video-mode-${m}`}>
              {t(MODE_TEXT[m])}
            </Radio>
          ))}
        </Radio.Group>
      </Field>
      <Field label={t('settings.video.processing')}>
        <Radio.Group
          value={processing}
          onChange={(e) => void changeProcessing(e.target.value as VideoProcessing)}
        >
          {VIDEO_PROCESSING.map((p) => (
            <Radio key={p} value={p} data-testid={`video-processing-${p}`}>
              {t(PROCESSING_TEXT[p])}
            </Radio>
          ))}
        </Radio.Group>
      </Field>
      <NumberParam
        label={t('settings.video.customBitrate')}
        testId="custom-bitrate"
        current={bitrate}
        param="h264_bitrate"
      />
      <NumberParam
        label={t('settings.video.frameRate')}
        testId="custom-fps"
        current={fps}
        param="desired_fps"
      />
      <Field label={t('settings.video.orientation')}>
        <Radio.Group
          value={orientation}
          onChange={(e) => changeOrientation(e.target.value as Orientation)}
        >
          {ORIENTATIONS.map((o) => (
            <Radio key={o} value={o} data-testid={`orientation-${o}`}>
              {`${o}°`}
            </Radio>
          ))}
        </Radio.Group>
      </Field>
      <Field label={t('settings.video.showCursor')}>
        <Switch
          data-testid="show-cursor"
          checked={showCursor}
          onChange={(checked) => save({ show_cursor: checked })}
        />
      </Field>
    </SettingsGroup>
  );
}
