/**
 * The capture device's account of the HDMI input in the status bar (issue 24, `streamer.capture`
 * of a `video.type: v4l2` device): the resolution and refresh from the DV timings while there is
 * a picture, else what the receiver says (no signal, no lock, out of range, a mode the encoder
 * cannot take, no device), with the server's sentence as the tooltip. Absent on other sources.
 */
import type { CaptureState } from '@kvm/protocol/streamer';
import { useTranslation } from 'react-i18next';
import type { I18nKey } from '../../i18n/keys';
import { useStreamer } from './streamer-store';

export function captureText(
  c: CaptureState,
  t: (key: I18nKey, vars?: Record<string, unknown>) => string,
): string {
  const vars = {
    width: c.width,
    height: c.height,
    hz: c.hz === null ? '?' : Math.round(c.hz * 100) / 100,
  };
  return t(`status.capture.${c.status}` as I18nKey, vars);
}

export function CaptureStatus() {
  const { t } = useTranslation();
  const capture = useStreamer((s) => s.state?.streamer?.capture ?? null);
  if (!capture) return null;
  return (
    <span
      data-testid="status-capture"
      data-status={capture.status}
      data-resolution={`${capture.width}x${capture.height}`}
      title={capture.error ?? capture.device}
    >
      {t('status.capture.label')}: {captureText(capture, t)}
    </span>
  );
}
