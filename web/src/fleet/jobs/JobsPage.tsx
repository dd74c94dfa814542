/** The jobs (`GET jobs`): batch actions and rollouts with their state and counts; admins start a rollout. */
import { useState } from 'react';
import { useLoader } from '../lib/loader';
import { Button, Table, Tag } from 'antd';
import { Link } from 'react-router';
import type { FleetJob } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api, asList } from '../lib/api';
import { fmtTime } from '../lib/format';
import { isAdmin, useSession } from '../lib/session';
import { useSelection } from '../devices/selection';
import { RolloutDialog } from './RolloutDialog';
import { JobCounts, JobState } from './JobBits';

export default function JobsPage() {
  const t = useT();
  const me = useSession((s) => s.me);
  const selection = useSelection((s) => s.selected);
  const { data: jobs } = useLoader(
    async () => asList<FleetJob>(await api.get<unknown>('jobs', { limit: 100 }), 'jobs'),
    [] as FleetJob[],
    '',
    5000,
  );
  const [rollout, setRollout] = useState(false);

  return (
    <section data-testid="view-jobs">
      <h2>{t('jobs.title')}</h2>
      {isAdmin(me) && (
        <Button onClick={() => setRollout(true)} data-testid="rollout-new">
          {t('rollout.new')}
        </Button>
      )}
      <Table<FleetJob>
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={jobs}
        onRow={(j) => ({ 'data-testid': 'job-row', 'data-job-id': j.id }) as object}
        columns={[
          {
            key: 'name',
            title: t('jobs.name'),
            render: (_, j) => (
              <Link to={`/jobs/${encodeURIComponent(j.id)}`} data-testid="job-link">
                {j.name}
              </Link>
            ),
          },
          { key: 'kind', title: t('jobs.kind'), render: (_, j) => <Tag>{j.action}</Tag> },
          { key: 'state', title: t('jobs.state'), render: (_, j) => <JobState state={j.state} /> },
          {
            key: 'counts',
            title: t('jobs.counts'),
            render: (_, j) => <JobCounts counts={j.counts} />,
          },
          { key: 'by', title: t('jobs.by'), render: (_, j) => j.created_by ?? '—' },
          { key: 'at', title: t('jobs.created'), render: (_, j) => fmtTime(j.created_at) },
        ]}
      />
      <RolloutDialog
        open={rollout}
        onClose={() => setRollout(false)}
        selection={[...selection.keys()]}
      />
    </section>
  );
}
