/**
 * A new rollout (admin, `POST rollouts`): a package the fleet holds, to a device group or the
 * current selection, the first stage's percentage, the failures allowed and the health timeout.
 */
import { useEffect, useState } from 'react';
import { InputNumber, Modal } from 'antd';
import { useNavigate } from 'react-router';
import type { FleetFile, FleetGroups, FleetJob, FleetRolloutRequest } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api, asList } from '../lib/api';
import { showError } from '../lib/session';
import { jobIdOf } from '../devices/BatchBar';

export function RolloutDialog(props: { open: boolean; onClose: () => void; selection: string[] }) {
  const { open, onClose, selection } = props;
  const t = useT();
  const navigate = useNavigate();
  const [packages, setPackages] = useState<FleetFile[]>([]);
  const [groups, setGroups] = useState<FleetGroups['device_groups']>([]);
  const [fileId, setFileId] = useState('');
  const [target, setTarget] = useState(selection.length > 0 ? 'selection' : '');
  const [percent, setPercent] = useState(10);
  const [maxFailures, setMaxFailures] = useState(0);
  const [health, setHealth] = useState(600);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!open) return;
    api
      .get<unknown>('files')
      .then(
        (r) => setPackages(asList<FleetFile>(r, 'files').filter((f) => f.kind === 'package')),
        showError,
      );
    api.get<FleetGroups>('groups').then((g) => setGroups(g.device_groups), showError);
  }, [open]);

  const start = async () => {
    const body: FleetRolloutRequest = {
      file_id: fileId,
      first_stage_percent: percent,
      max_failures: maxFailures,
      health_timeout_s: health,
      ...(target === 'selection' ? { devices: selection } : { group: target }),
    };
    setBusy(true);
    try {
      const id = jobIdOf(await api.post<FleetJob>('rollouts', body));
      onClose();
      void navigate(id ? `/jobs/${encodeURIComponent(id)}` : '/jobs');
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal
      open={open}
      title={t('rollout.new')}
      okText={t('rollout.start')}
      cancelText={t('common.cancel')}
      okButtonProps={{
        disabled: !fileId || !target,
        loading: busy,
        ...{ 'data-testid': 'rollout-start' },
      }}
      onOk={() => void start()}
      onCancel={onClose}
      destroyOnHidden
    >
      <div className="fleet-form">
        <label htmlFor="ro-file">{t('rollout.package')}</label>
        <select
          id="ro-file"
          className="fleet-select"
          value={fileId}
          onChange={(e) => setFileId(e.target.value)}
          data-testid="rollout-file"
        >
          <option value="">{t('common.choose')}</option>
          {packages.map((f) => (
            <option key={f.id} value={f.id}>
              {f.name}
              {f.version ? ` (${f.version})` : ''}
            </option>
          ))}
        </select>
        <label htmlFor="ro-target">{t('rollout.target')}</label>
        <select
          id="ro-target"
          className="fleet-select"
          value={target}
          onChange={(e) => setTarget(e.target.value)}
          data-testid="rollout-target"
        >
          <option value="">{t('common.choose')}</option>
          {selection.length > 0 && (
            <option value="selection">{t('rollout.selection', { n: selection.length })}</option>
          )}
          {groups.map((g) => (
            <option key={g.id} value={g.id}>
              {t('rollout.group', { name: g.name, n: g.device_count })}
            </option>
          ))}
        </select>
        <NumberField
          id="ro-percent"
          label={t('rollout.firstStage')}
          min={1}
          max={100}
          value={percent}
          onChange={(v) => setPercent(v ?? 10)}
          testId="rollout-percent"
        />
        <NumberField
          id="ro-failures"
          label={t('rollout.maxFailures')}
          min={0}
          value={maxFailures}
          onChange={(v) => setMaxFailures(v ?? 0)}
          testId="rollout-max-failures"
        />
        <NumberField
          id="ro-health"
          label={t('rollout.healthTimeout')}
          min={10}
          value={health}
          onChange={(v) => setHealth(v ?? 600)}
          testId="rollout-health-timeout"
        />
      </div>
    </Modal>
  );
}

/** A labelled number of the form (the label names the input). */
function NumberField(props: {
  id: string;
  label: string;
  min: number;
  max?: number;
  value: number;
  onChange: (v: number | null) => void;
  testId: string;
}) {
  return (
    <>
      <label htmlFor={props.id}>{props.label}</label>
      <InputNumber
        id={props.id}
        min={props.min}
        max={props.max}
        value={props.value}
        onChange={props.onChange}
        data-testid={props.testId}
      />
    </>
  );
}
