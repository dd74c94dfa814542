/**
 * The latency readout in the status bar (issue 28): the newest presented frame's capture-to-
 * display delay, measured per frame (latency-readout.ts), and what it covers in the tooltip.
 * Absent until the first frame is dated (no clock estimate yet, or a browser without the means).
 */
import { useTranslation } from 'react-i18next';
import { GrowOnly } from '../../components/GrowOnly';
import { useLatencyView } from './latency-readout';

export function LatencyStatus() {
  const { t } = useTranslation();
  const view = useLatencyView();
  if (view.latencyMs === null) return null;
  const value = Math.max(0, Math.round(view.latencyMs));
  // its own GrowOnly: none (no empty place in the bar) until a frame is dated
  return (
    <GrowOnly>
      <span
        data-testid="status-latency"
        data-latency-ms={value}
        data-mode={view.mode ?? ''}
        title={t('video.latency.tip', { bound: Math.ceil(view.boundMs ?? 0) })}
      >
        {t('video.latency.text', { value })}
      </span>
    </GrowOnly>
  );
}
