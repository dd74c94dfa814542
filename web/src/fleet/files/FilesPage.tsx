/** Files the fleet holds (admin): disk images to mount and firmware packages; upload with progress, delete. */
import { useState, useSyncExternalStore } from 'react';
import { useLoader } from '../lib/loader';
import { Button, Progress, Table, Tag } from 'antd';
import type { FleetFile } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api, asList, fleetUrl } from '../lib/api';
import { fmtBytes, fmtTime } from '../lib/format';
import { showError, showStatus } from '../lib/session';
import { UploadController } from '../../features/storage/upload';
import { Confirm } from '../components/Confirm';

export default function FilesPage() {
  const t = useT();
  const { data: files, reload: load } = useLoader(
    async () => asList<FleetFile>(await api.get<unknown>('files'), 'files'),
    [] as FleetFile[],
  );
  const [kind, setKind] = useState<FleetFile['kind']>('image');
  const [chosen, setChosen] = useState<File | null>(null);
  const [upload] = useState(() => new UploadController());
  const transfer = useSyncExternalStore(upload.subscribe, upload.getSnapshot);
  const [remove, setRemove] = useState<FleetFile | null>(null);

  const send = async () => {
    if (!chosen) return;
    try {
      const f = await upload.send<FleetFile>('', chosen, {
        name: chosen.name,
        total: chosen.size,
        method: 'PUT',
        url: fleetUrl(`files/${kind}/${encodeURIComponent(chosen.name)}`),
      });
      showStatus(t('files.uploaded', { name: f.name }));
      setChosen(null);
      upload.clear();
      await load();
    } catch (e) {
      showError(e);
    }
  };

  return (
    <section data-testid="view-files">
      <h2>{t('files.title')}</h2>
      <div className="fleet-bar">
        <select
          className="fleet-select"
          aria-label={t('files.kind')}
          value={kind}
          onChange={(e) => setKind(e.target.value === 'package' ? 'package' : 'image')}
          data-testid="file-kind"
        >
          <option value="image">{t('files.image')}</option>
          <option value="package">{t('files.package')}</option>
        </select>
        <input
          type="file"
          aria-label={t('files.choose')}
          onChange={(e) => setChosen(e.target.files?.[0] ?? null)}
          data-testid="file-input"
        />
        <Button
          type="primary"
          disabled={!chosen || transfer.phase === 'running'}
          onClick={() => void send()}
          data-testid="file-upload"
        >
          {t('files.upload')}
        </Button>
        {transfer.phase === 'running' && (
          <>
            <Progress
              style={{ width: 200 }}
              percent={transfer.percent}
              data-testid="file-progress"
            />
            <Button onClick={() => upload.cancel()} data-testid="file-upload-cancel">
              {t('common.cancel')}
            </Button>
          </>
        )}
      </div>
      <Table<FleetFile>
        rowKey="id"
        size="small"
        pagination={false}
        dataSource={files}
        onRow={(f) => ({ 'data-testid': 'file-row', 'data-file-id': f.id }) as object}
        columns={[
          { key: 'name', title: t('files.name'), dataIndex: 'name' },
          {
            key: 'kind',
            title: t('files.kind'),
            render: (_, f) => <Tag>{t(`files.${f.kind}`)}</Tag>,
          },
          { key: 'size', title: t('files.size'), render: (_, f) => fmtBytes(f.size) },
          { key: 'version', title: t('devices.version'), render: (_, f) => f.version ?? '' },
          {
            key: 'sha',
            title: 'SHA-256',
            render: (_, f) => <code title={f.sha256}>{f.sha256.slice(0, 12)}</code>,
          },
          { key: 'at', title: t('jobs.created'), render: (_, f) => fmtTime(f.created_at) },
          {
            key: 'del',
            title: '',
            render: (_, f) => (
              <Button size="small" danger onClick={() => setRemove(f)} data-testid="file-delete">
                {t('common.delete')}
              </Button>
            ),
          },
        ]}
      />
      <Confirm
        open={remove !== null}
        danger
        title={t('files.deleteTitle', { name: remove?.name ?? '' })}
        onCancel={() => setRemove(null)}
        onConfirm={async () => {
          if (!remove) return;
          await api.del(`files/${encodeURIComponent(remove.id)}`);
          setRemove(null);
          await load();
        }}
      />
    </section>
  );
}
