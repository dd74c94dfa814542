/** A job's state tag and its per-state counts. */
import { Space, Tag } from 'antd';
import type { FleetJob, FleetJobDeviceState, FleetJobState } from '@kvm/protocol/fleet';
import { useT, type FleetKey } from '../i18n';

const STATE_COLOR: Record<string, string> = {
  running: 'processing',
  done: 'success',
  ok: 'success',
  stopped: 'warning',
  cancelled: 'default',
  failed: 'error',
  skipped: 'default',
  pending: 'default',
};

export function JobState({ state }: { state: FleetJobState | FleetJobDeviceState }) {
  const t = useT();
  return (
    <Tag color={STATE_COLOR[state]} data-testid="job-state" data-state={state}>
      {t(`jobState.${state}` as FleetKey)}
    </Tag>
  );
}

export function JobCounts({ counts }: { counts: FleetJob['counts'] }) {
  const t = useT();
  return (
    <Space size={4} data-testid="job-counts">
      {(Object.keys(counts) as FleetJobDeviceState[])
        .filter((k) => counts[k] > 0)
        .map((k) => (
          <span key={k} data-testid={`job-count-${k}`}>
            {t(`jobState.${k}` as FleetKey)} {counts[k]}
          </span>
        ))}
    </Space>
  );
}
