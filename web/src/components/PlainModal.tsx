import { useState, type ReactNode } from 'react';
import { Modal } from 'antd';
import { useTranslation } from 'react-i18next';

export interface PlainModalProps {
  open: boolean;
  title?: ReactNode;
  children?: ReactNode;
  okText?: ReactNode;
  cancelText?: ReactNode;
  width?: number;
  danger?: boolean;
  /**
   * Runs first when OK is pressed; the OK button shows a loading state meanwhile. Returning
   * false (or throwing) keeps the dialog open; the hook shows its own error.
   */
  beforeOk?: () => Promise<boolean | void> | boolean | void;
  onOk?: () => void;
  onCancel: () => void;
  okTestId?: string;
  cancelTestId?: string;
}

/** SPEC 2 shared dialogs: a plain modal with cancel and confirm buttons. */
export function PlainModal({
  open,
  title,
  children,
  okText,
  cancelText,
  width,
  danger,
  beforeOk,
  onOk,
  onCancel,
  okTestId,
  cancelTestId,
}: PlainModalProps) {
  const { t } = useTranslation();
  const [busy, setBusy] = useState(false);

  const handleOk = async () => {
    if (beforeOk) {
      setBusy(true);
      let proceed: boolean;
      try {
        proceed = (await beforeOk()) !== false;
      } catch {
        proceed = false;
      } finally {
        setBusy(false);
      }
      if (!proceed) return;
    }
    onOk?.();
  };

  return (
    <Modal
      open={open}
      title={title}
      width={width}
      okText={okText ?? t('common.confirm')}
      cancelText={cancelText ?? t('common.cancel')}
      okButtonProps={{ danger, loading: busy, ...testId(okTestId) }}
      cancelButtonProps={{ disabled: busy, ...testId(cancelTestId) }}
      onOk={() => void handleOk()}
      onCancel={busy ? undefined : onCancel}
      mask={{ closable: !busy }}
      destroyOnHidden
    >
      {children}
    </Modal>
  );
}

function testId(id: string | undefined): Record<string, string> {
  return id ? { 'data-testid': id } : {};
}
