import { useState } from 'react';
import { Button } from 'antd';
import { useTranslation } from 'react-i18next';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import { withDetail } from '../../lib/api';
import { loadApps } from './apps-store';

/** Unbind (logout, leave, remove) after a confirmation; the device's error stays in a toast. */
export function UnbindButton({
  name,
  testId,
  text,
  onUnbind,
}: {
  name: string;
  testId: string;
  text?: string;
  onUnbind: () => Promise<void>;
}) {
  const { t } = useTranslation();
  const message = useMessage();
  const [asking, setAsking] = useState(false);

  const confirm = async () => {
    try {
      await onUnbind();
    } catch (err) {
      void message.error(withDetail(t('apps.actionFailed'), err));
      throw err;
    }
    await loadApps().catch(() => undefined);
    void message.success(t('apps.unbound'));
    setAsking(false);
  };

  return (
    <>
      <Button danger onClick={() => setAsking(true)} data-testid={testId}>
        {text ?? t('apps.unbind')}
      </Button>
      <ConfirmDialog
        open={asking}
        okText={text ?? t('apps.unbind')}
        onConfirm={confirm}
        onCancel={() => setAsking(false)}
      >
        <span data-testid="app-unbind-confirm">{t('apps.unbindConfirm', { name })}</span>
      </ConfirmDialog>
    </>
  );
}
