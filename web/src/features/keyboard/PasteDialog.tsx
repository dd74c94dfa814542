import { Button, Modal } from 'antd';
import { useTranslation } from 'react-i18next';
import { PasteFields, usePasteForm } from './PasteForm';

/**
 * SPEC 7 paste text from the toolbar: the paste form (PasteForm.tsx, shared with the toolbox's
 * clipboard group) in a dialog whose footer closes or sends.
 */
export default function PasteDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const form = usePasteForm();

  return (
    <Modal
      open
      title={t('paste.title')}
      onCancel={onClose}
      mask={{ closable: !form.busy }}
      destroyOnHidden
      footer={[
        <Button key="close" onClick={onClose} data-testid="paste-close">
          {t('paste.close')}
        </Button>,
        <Button
          key="send"
          type="primary"
          loading={form.busy}
          onClick={() => void form.send()}
          data-testid="paste-send"
        >
          {t('paste.send')}
        </Button>,
      ]}
    >
      <PasteFields form={form} />
    </Modal>
  );
}
