/**
 * The batch bar over the selected devices: an action (FLEET_ACTIONS; mount picks an image the
 * fleet holds, CD-ROM or not; a shortcut takes its keys), confirmed, then `POST actions` and the
 * job's page. Admins also start a rollout to the selection from here.
 */
import { useEffect, useState } from 'react';
import { Button, Input } from 'antd';
import { useNavigate } from 'react-router';
import {
  FLEET_ACTIONS,
  type FleetAction,
  type FleetFile,
  type FleetJob,
} from '@kvm/protocol/fleet';
import { useT, type FleetKey } from '../i18n';
import { api, asList } from '../lib/api';
import { isAdmin, showError, useSession } from '../lib/session';
import { Confirm } from '../components/Confirm';
import { RolloutDialog } from '../jobs/RolloutDialog';
import { clearSelection, useSelection } from './selection';

export const ACTION_KEYS: Record<FleetAction, FleetKey> = {
  power: 'action.power',
  power_long: 'action.power_long',
  reset: 'action.reset',
  wol: 'action.wol',
  reboot: 'action.reboot',
  msd_mount: 'action.msd_mount',
  msd_unmount: 'action.msd_unmount',
  shortcut: 'action.shortcut',
};

export const DEFAULT_SHORTCUT = 'ControlLeft,AltLeft,Delete';

/** The job id of `POST actions`' answer (the job, or {job}). */
export function jobIdOf(answer: unknown): string | null {
  const a = answer as { id?: unknown; job?: { id?: unknown } } | null;
  const id = a?.id ?? a?.job?.id;
  return typeof id === 'string' ? id : null;
}

export function BatchBar() {
  const t = useT();
  const navigate = useNavigate();
  const me = useSession((s) => s.me);
  const selected = useSelection((s) => s.selected);
  const [action, setAction] = useState<FleetAction>('power');
  const [images, setImages] = useState<FleetFile[]>([]);
  const [fileId, setFileId] = useState('');
  const [cdrom, setCdrom] = useState(true);
  const [keys, setKeys] = useState(DEFAULT_SHORTCUT);
  const [confirm, setConfirm] = useState(false);
  const [rollout, setRollout] = useState(false);

  useEffect(() => {
    if (action !== 'msd_mount' || images.length > 0) return;
    api
      .get<unknown>('files')
      .then(
        (r) => setImages(asList<FleetFile>(r, 'files').filter((f) => f.kind === 'image')),
        showError,
      );
  }, [action, images.length]);

  if (selected.size === 0) return null;
  const ids = [...selected.keys()];
  const args =
    action === 'msd_mount'
      ? { file_id: fileId, cdrom }
      : action === 'shortcut'
        ? { keys }
        : undefined;
  const ready = action !== 'msd_mount' || fileId !== '';

  return (
    <div className="fleet-bar" data-testid="batch-bar" role="region" aria-label={t('batch.label')}>
      <span data-testid="batch-count">{t('batch.selected', { n: selected.size })}</span>
      <select
        className="fleet-select"
        aria-label={t('batch.action')}
        value={action}
        onChange={(e) => setAction(e.target.value as FleetAction)}
        data-testid="batch-action"
      >
        {FLEET_ACTIONS.map((a) => (
          <option key={a} value={a}>
            {t(ACTION_KEYS[a])}
          </option>
        ))}
      </select>
      {action === 'msd_mount' && (
        <>
          <select
            className="fleet-select"
            aria-label={t('batch.image')}
            value={fileId}
            onChange={(e) => setFileId(e.target.value)}
            data-testid="batch-file"
          >
            <option value="">{t('batch.chooseImage')}</option>
            {images.map((f) => (
              <option key={f.id} value={f.id}>
                {f.name}
              </option>
            ))}
          </select>
          <label className="fleet-check">
            <input
              type="checkbox"
              checked={cdrom}
              onChange={(e) => setCdrom(e.target.checked)}
              data-testid="batch-cdrom"
            />
            {t('batch.cdrom')}
          </label>
        </>
      )}
      {action === 'shortcut' && (
        <Input
          style={{ maxWidth: 280 }}
          aria-label={t('batch.keys')}
          value={keys}
          onChange={(e) => setKeys(e.target.value)}
          data-testid="batch-keys"
        />
      )}
      <Button
        type="primary"
        disabled={!ready}
        onClick={() => setConfirm(true)}
        data-testid="batch-run"
      >
        {t('batch.run')}
      </Button>
      {isAdmin(me) && (
        <Button onClick={() => setRollout(true)} data-testid="batch-rollout">
          {t('rollout.new')}
        </Button>
      )}
      <Button type="link" onClick={clearSelection} data-testid="batch-clear">
        {t('batch.clear')}
      </Button>
      <Confirm
        open={confirm}
        title={t('batch.confirmTitle', { action: t(ACTION_KEYS[action]), n: ids.length })}
        danger={action !== 'wol'}
        onCancel={() => setConfirm(false)}
        onConfirm={async () => {
          const answer = await api.post<FleetJob>('actions', { action, args, devices: ids });
          setConfirm(false);
          const id = jobIdOf(answer);
          void navigate(id ? `/jobs/${encodeURIComponent(id)}` : '/jobs');
        }}
      >
        <p data-testid="batch-confirm-list">
          {[...selected.values()].slice(0, 20).join(', ')}
          {selected.size > 20 ? ` … (+${selected.size - 20})` : ''}
        </p>
      </Confirm>
      <RolloutDialog open={rollout} onClose={() => setRollout(false)} selection={ids} />
    </div>
  );
}
