import type { ReactNode } from 'react';
import { Space } from 'antd';
import { ExclamationCircleFilled } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import { CONFIRM_DIALOG_WIDTH } from '@kvm/protocol/constants';
import { PlainModal } from './PlainModal';

export interface ConfirmDialogProps {
  open: boolean;
  children: ReactNode;
  okText?: ReactNode;
  /** The cancel button's text (default Cancel): say what it keeps when OK also "cancels". */
  cancelText?: ReactNode;
  /**
   * Awaited with a loading OK button; a rejection keeps the dialog open. On success the caller
   * closes the dialog (open = false), or navigates away.
   */
  onConfirm: () => Promise<void> | void;
  onCancel: () => void;
}

/** SPEC 2 shared dialogs: caution title, red OK button, 400 wide. */
export function ConfirmDialog({
  open,
  children,
  okText,
  cancelText,
  onConfirm,
  onCancel,
}: ConfirmDialogProps) {
  const { t } = useTranslation();
  return (
    <PlainModal
      open={open}
      width={CONFIRM_DIALOG_WIDTH}
      danger
      title={
        <Space>
          <ExclamationCircleFilled style={{ color: 'var(--ant-color-warning, #faad14)' }} />
          {t('common.caution')}
        </Space>
      }
      okText={okText ?? t('common.ok')}
      cancelText={cancelText}
      beforeOk={async () => {
        await onConfirm();
      }}
      onCancel={onCancel}
      okTestId="confirm-ok"
      cancelTestId="confirm-cancel"
    >
      {children}
    </PlainModal>
  );
}
