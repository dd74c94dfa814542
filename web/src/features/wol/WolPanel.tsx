import { useEffect, useState } from 'react';
import { Alert } from 'antd';
import { useTranslation } from 'react-i18next';
import type { WolDevice } from '@kvm/protocol/wol';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { AddForm } from './AddForm';
import { DeviceList } from './DeviceList';
import { RenameDialog } from './RenameDialog';
import { useWolAction } from './use-wol-action';
import { loadWolDevices, removeWolDevice, useWol, wakeWolDevice } from './wol';

/** The dialog open over the list: a rename or the confirm of a removal. */
type Target = { action: 'rename' | 'remove'; device: WolDevice };

/**
 * SPEC 2 wake-on-LAN device list: add (name and MAC), rename, delete, wake. One component per
 * section; the calls share `useWolAction` (toasts and the panel's error line).
 */
export default function WolPanel() {
  const { t } = useTranslation();
  const actions = useWolAction();
  const devices = useWol((s) => s.devices);
  const status = useWol((s) => s.status);
  const [target, setTarget] = useState<Target | null>(null);
  const [waking, setWaking] = useState<string | null>(null);
  const { showError } = actions;

  useEffect(() => {
    loadWolDevices().catch((err: unknown) => showError(t('wol.loadFailed'), err));
  }, [t, showError]);

  const wake = async (device: WolDevice) => {
    setWaking(device.mac);
    await actions.run(() => wakeWolDevice(device.mac), {
      success: t('wol.woken', { name: device.name }),
      failure: t('wol.wakeFailed'),
      clearsError: true,
    });
    setWaking(null);
  };

  const removing = target?.action === 'remove' ? target.device : null;
  const remove = async (device: WolDevice) => {
    await actions.run(() => removeWolDevice(device.mac), {
      success: t('wol.removed'),
      failure: t('wol.removeFailed'),
    });
    setTarget(null);
  };

  return (
    <div data-testid="wol-panel">
      <AddForm devices={devices} actions={actions} />
      {actions.error && (
        <Alert
          type="error"
          showIcon
          closable={{ onClose: actions.clearError }}
          title={<span data-testid="wol-error">{actions.error}</span>}
          style={{ marginTop: 12 }}
        />
      )}
      <div style={{ marginTop: 16 }}>
        <DeviceList
          devices={devices}
          loading={status === 'loading'}
          waking={waking}
          onWake={(device) => void wake(device)}
          onRename={(device) => setTarget({ action: 'rename', device })}
          onRemove={(device) => setTarget({ action: 'remove', device })}
        />
      </div>
      {target?.action === 'rename' && (
        <RenameDialog device={target.device} actions={actions} onClose={() => setTarget(null)} />
      )}
      <ConfirmDialog
        open={removing !== null}
        okText={t('wol.remove')}
        onConfirm={() => (removing ? remove(removing) : undefined)}
        onCancel={() => setTarget(null)}
      >
        {removing ? t('wol.removeConfirm', { name: removing.name, mac: removing.mac }) : null}
      </ConfirmDialog>
    </div>
  );
}
