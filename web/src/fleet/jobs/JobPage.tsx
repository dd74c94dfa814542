/** One job (`GET jobs/:id`): each device's result, polled while it runs; cancel (`POST jobs/:id/cancel`). */
import { useCallback, useEffect, useState } from 'react';
import { Button, Descriptions, Table } from 'antd';
import { useParams } from 'react-router';
import type { FleetJobDetail } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { fmtTime } from '../lib/format';
import { showError, showStatus } from '../lib/session';
import { Confirm } from '../components/Confirm';
import { JobCounts, JobState } from './JobBits';

export const JOB_POLL_MS = 2000;

export default function JobPage() {
  const t = useT();
  const { id = '' } = useParams();
  const [detail, setDetail] = useState<FleetJobDetail | null>(null);
  const [cancel, setCancel] = useState(false);

  const load = useCallback(async () => {
    try {
      const d = await api.get<FleetJobDetail>(`jobs/${encodeURIComponent(id)}`);
      setDetail(d);
      return d.job.state === 'running';
    } catch (e) {
      showError(e);
      return false;
    }
  }, [id]);

  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      const running = await load();
      if (live && running) timer = setTimeout(() => void tick(), JOB_POLL_MS);
    };
    void tick();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [load]);

  if (!detail) return null;
  const { job, devices } = detail;
  return (
    <section data-testid="view-job" data-job-id={job.id}>
      <h2 data-testid="job-name">{job.name}</h2>
      <Descriptions size="small" column={2}>
        <Descriptions.Item label={t('jobs.state')}>
          <JobState state={job.state} />
        </Descriptions.Item>
        <Descriptions.Item label={t('jobs.stage')}>
          <span data-testid="job-stage">{job.stage}</span>
        </Descriptions.Item>
        <Descriptions.Item label={t('jobs.counts')}>
          <JobCounts counts={job.counts} />
        </Descriptions.Item>
        <Descriptions.Item label={t('jobs.reason')}>
          <span data-testid="job-reason">{job.reason ?? '—'}</span>
        </Descriptions.Item>
        <Descriptions.Item label={t('jobs.by')}>{job.created_by ?? '—'}</Descriptions.Item>
        <Descriptions.Item label={t('jobs.created')}>{fmtTime(job.created_at)}</Descriptions.Item>
      </Descriptions>
      {job.state === 'running' && (
        <Button danger onClick={() => setCancel(true)} data-testid="job-cancel">
          {t('jobs.cancel')}
        </Button>
      )}
      <Table
        rowKey="device_id"
        size="small"
        pagination={false}
        dataSource={devices}
        onRow={(d) => ({ 'data-testid': 'job-device', 'data-device-id': d.device_id }) as object}
        columns={[
          { key: 'name', title: t('devices.name'), dataIndex: 'name' },
          { key: 'stage', title: t('jobs.stage'), dataIndex: 'stage' },
          { key: 'state', title: t('jobs.state'), render: (_, d) => <JobState state={d.state} /> },
          { key: 'detail', title: t('jobs.detail'), render: (_, d) => d.detail ?? '' },
          { key: 'start', title: t('jobs.started'), render: (_, d) => fmtTime(d.started_at) },
          { key: 'end', title: t('jobs.finished'), render: (_, d) => fmtTime(d.finished_at) },
        ]}
      />
      <Confirm
        open={cancel}
        danger
        title={t('jobs.cancelTitle', { name: job.name })}
        onCancel={() => setCancel(false)}
        onConfirm={async () => {
          await api.post(`jobs/${encodeURIComponent(job.id)}/cancel`);
          setCancel(false);
          showStatus(t('jobs.cancelled'));
          await load();
        }}
      />
    </section>
  );
}
