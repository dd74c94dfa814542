/**
 * The parts the devices page and the screen wall share: the device-group filter (it loads the
 * groups the user sees) and the previous/next buttons of a DeviceQuery.
 */
import { useEffect, useState, type ReactNode } from 'react';
import { Button } from 'antd';
import type { FleetGroups } from '@kvm/protocol/fleet';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { showError } from '../lib/session';
import type { DeviceListSnapshot, DeviceQuery } from './device-query';

export function DeviceGroupSelect(props: {
  value: string;
  onChange: (group: string) => void;
  testId: string;
}) {
  const t = useT();
  const [groups, setGroups] = useState<FleetGroups['device_groups']>([]);

  useEffect(() => {
    api.get<FleetGroups>('groups').then(
      (g) => setGroups(g.device_groups),
      () => setGroups([]),
    );
  }, []);

  return (
    <select
      className="fleet-select"
      aria-label={t('devices.group')}
      value={props.value}
      onChange={(e) => props.onChange(e.target.value)}
      data-testid={props.testId}
    >
      <option value="">{t('devices.allGroups')}</option>
      {groups.map((g) => (
        <option key={g.id} value={g.id}>
          {g.name}
        </option>
      ))}
    </select>
  );
}

/** Previous and next (test ids `<prefix>-prev`, `<prefix>-next`), `between` them. */
export function PageButtons(props: {
  query: DeviceQuery;
  snap: DeviceListSnapshot;
  prefix: string;
  between?: ReactNode;
}) {
  const t = useT();
  const { query, snap } = props;
  return (
    <>
      <Button
        disabled={!snap.hasPrevious}
        onClick={() => void query.previous().catch(showError)}
        data-testid={`${props.prefix}-prev`}
      >
        {t('common.previous')}
      </Button>
      {props.between}
      <Button
        disabled={!snap.hasNext}
        onClick={() => void query.next().catch(showError)}
        data-testid={`${props.prefix}-next`}
      >
        {t('common.next')}
      </Button>
    </>
  );
}
