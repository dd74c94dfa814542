import { useState, type FormEvent } from 'react';
import { Button, Form, Input } from 'antd';
import { useTranslation } from 'react-i18next';
import { WOL_NAME_MAX, type WolDevice } from '@kvm/protocol/wol';
import { useErrorText } from './error-text';
import type { WolActions } from './use-wol-action';
import { addWolDevice, checkNewDevice, type NewWolDevice } from './wol';

/** SPEC 5: a name and a MAC, checked here before the server sees them. */
export function AddForm({ devices, actions }: { devices: WolDevice[]; actions: WolActions }) {
  const { t } = useTranslation();
  const errorText = useErrorText();
  const [name, setName] = useState('');
  const [mac, setMac] = useState('');
  const [errors, setErrors] = useState<NewWolDevice>({});
  const [saving, setSaving] = useState(false);

  const submit = async (event?: FormEvent) => {
    event?.preventDefault();
    const found = checkNewDevice(name, mac, devices);
    setErrors(found);
    if (found.name || found.mac) return;
    setSaving(true);
    const added = await actions.run(() => addWolDevice(name, mac), {
      success: t('wol.added'),
      failure: t('wol.addFailed'),
    });
    if (added) {
      setName('');
      setMac('');
    }
    setSaving(false);
  };

  return (
    <form onSubmit={(e) => void submit(e)} noValidate>
      <Form.Item
        label={t('wol.name')}
        layout="vertical"
        validateStatus={errors.name ? 'error' : undefined}
        help={errorText(errors.name)}
        style={{ marginBottom: 8 }}
      >
        <Input
          value={name}
          maxLength={WOL_NAME_MAX}
          onChange={(e) => setName(e.target.value)}
          data-testid="wol-add-name"
        />
      </Form.Item>
      <Form.Item
        label={t('wol.mac')}
        layout="vertical"
        validateStatus={errors.mac ? 'error' : undefined}
        help={errorText(errors.mac)}
        style={{ marginBottom: 8 }}
      >
        <Input
          value={mac}
          placeholder={t('wol.macPlaceholder')}
          onChange={(e) => setMac(e.target.value)}
          data-testid="wol-add-mac"
          spellCheck={false}
          autoComplete="off"
        />
      </Form.Item>
      <Button type="primary" htmlType="submit" loading={saving} data-testid="wol-add-submit">
        {t('wol.add')}
      </Button>
    </form>
  );
}
