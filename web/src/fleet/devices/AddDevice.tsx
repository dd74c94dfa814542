/**
 * "Add device": the 8-digit code a device shows (`POST devices/claim`). A device's bind link
 * (`/?code=<8 digits>#devices`) fills it in, also after signing in.
 */
import { useState, type FormEvent } from 'react';
import { Button, Input } from 'antd';
import { useT } from '../i18n';
import { api } from '../lib/api';
import { bindCodeOf } from '../lib/links';
import { showError, showStatus } from '../lib/session';

export function AddDevice({ onAdded }: { onAdded: () => void }) {
  const t = useT();
  const [code, setCode] = useState(() => bindCodeOf(location.search) ?? '');
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    try {
      const r = await api.post<{ name: string; model: string }>('devices/claim', {
        code: code.replace(/\s/g, ''),
      });
      setCode('');
      showStatus(t('devices.adding', { name: r.name }));
      onAdded();
      // the device collects its binding on its next poll: look again shortly
      setTimeout(onAdded, 1500);
    } catch (e) {
      showError(e);
    }
  };
  return (
    <form className="fleet-bar" onSubmit={(e) => void submit(e)} noValidate>
      <label htmlFor="claim-code">{t('devices.addLabel')}</label>
      <Input
        id="claim-code"
        style={{ maxWidth: 160 }}
        inputMode="numeric"
        maxLength={9}
        autoComplete="off"
        value={code}
        onChange={(e) => setCode(e.target.value)}
        data-testid="claim-code"
      />
      <Button htmlType="submit" data-testid="claim-submit">
        {t('devices.add')}
      </Button>
    </form>
  );
}
