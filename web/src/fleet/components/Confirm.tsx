/** A confirmation dialog (antd Modal) whose buttons the e2e specs find: confirm-ok, confirm-cancel. */
import { useState, type ReactNode } from 'react';
import { Modal } from 'antd';
import { useT } from '../i18n';
import { showError } from '../lib/session';

export interface ConfirmProps {
  open: boolean;
  title: ReactNode;
  children?: ReactNode;
  danger?: boolean;
  /** Awaited with a loading OK button; a rejection is shown and keeps the dialog open. */
  onConfirm: () => Promise<void> | void;
  onCancel: () => void;
}

export function Confirm({ open, title, children, danger, onConfirm, onCancel }: ConfirmProps) {
  const t = useT();
  const [busy, setBusy] = useState(false);
  return (
    <Modal
      open={open}
      title={title}
      okText={t('common.confirm')}
      cancelText={t('common.cancel')}
      okButtonProps={{ danger, loading: busy, ...{ 'data-testid': 'confirm-ok' } }}
      cancelButtonProps={{ ...{ 'data-testid': 'confirm-cancel' } }}
      destroyOnHidden
      onCancel={onCancel}
      onOk={async () => {
        setBusy(true);
        try {
          await onConfirm();
        } catch (e) {
          // why it failed goes to the status line; the dialog stays
          showError(e);
        } finally {
          setBusy(false);
        }
      }}
    >
      {children}
    </Modal>
  );
}
