import { useState } from 'react';
import { Form, Input } from 'antd';
import { useTranslation } from 'react-i18next';
import { WOL_NAME_MAX, type WolDevice } from '@kvm/protocol/wol';
import { PlainModal } from '../../components/PlainModal';
import { useErrorText } from './error-text';
import type { WolActions } from './use-wol-action';
import { checkRename, renameWolDevice, type WolFieldError } from './wol';

/** SPEC 5: a new name, required and not the old one; the dialog stays open on a failure. */
export function RenameDialog({
  device,
  actions,
  onClose,
}: {
  device: WolDevice;
  actions: WolActions;
  onClose: () => void;
}) {
  const { t } = useTranslation();
  const errorText = useErrorText();
  const [name, setName] = useState(device.name);
  const [error, setError] = useState<WolFieldError | null>(null);

  const save = async (): Promise<boolean> => {
    const found = checkRename(device.name, name);
    setError(found);
    if (found) return false;
    return actions.run(() => renameWolDevice(device.mac, name), {
      success: t('wol.renamed'),
      failure: t('wol.renameFailed'),
      toastOnly: true,
    });
  };

  return (
    <PlainModal
      open
      title={t('wol.renameTitle', { name: device.name })}
      beforeOk={save}
      onOk={onClose}
      onCancel={onClose}
      okTestId="wol-rename-ok"
      cancelTestId="wol-rename-cancel"
    >
      <Form.Item
        validateStatus={error ? 'error' : undefined}
        help={errorText(error)}
        style={{ marginBottom: 0 }}
      >
        <Input
          value={name}
          maxLength={WOL_NAME_MAX}
          onChange={(e) => setName(e.target.value)}
          data-testid="wol-rename-input"
          autoFocus
        />
      </Form.Item>
    </PlainModal>
  );
}
