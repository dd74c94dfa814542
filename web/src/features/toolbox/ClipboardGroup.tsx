import { Button, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { PasteFields, usePasteForm } from '../keyboard/PasteForm';

/**
 * GL's toolbox clipboard: the toolbar's paste form (keyboard/PasteForm.tsx, the same state and
 * the same POST /api/hid/print), kept open in the panel with its own send button.
 */
export function ClipboardGroup() {
  const { t } = useTranslation();
  const form = usePasteForm();
  return (
    <>
      <Typography.Paragraph type="secondary" style={{ marginTop: 0 }}>
        {t('toolbox.clipboardHint')}
      </Typography.Paragraph>
      <PasteFields
        form={form}
        idPrefix="toolbox-paste"
        actions={
          <div style={{ marginTop: 12, textAlign: 'right' }}>
            <Button
              type="primary"
              loading={form.busy}
              onClick={() => void form.send()}
              data-testid="toolbox-paste-send"
            >
              {t('paste.send')}
            </Button>
          </div>
        }
      />
    </>
  );
}
