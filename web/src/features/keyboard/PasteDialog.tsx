import { useState } from 'react';
import { Alert, Button, Checkbox, Input, Modal, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { DEFAULT_KEYMAP, KEYMAPS } from '@kvm/protocol/enums';
import type { PrintResult } from '@kvm/protocol/hid/state';
import { DropdownSelect } from '../../components/DropdownSelect';
import { errorMessage } from '../../lib/api';
import { useConfig } from '../config/config-store';
import { virtualKeyInput } from './keyboard-session';
import { PASTE_MAX_CHARS, checkPasteText, pasteLength, pasteText } from './paste';

const KEYMAP_OPTIONS = KEYMAPS.map((name) => ({ value: name as string, label: name }));

/**
 * SPEC 7 paste text: the device types the text on the remote computer through a keymap (the
 * `keymap` setting unless another is picked here). Too long a text is refused (SPEC 5); the
 * characters the keymap cannot type are listed after sending.
 */
export default function PasteDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const configKeymap = useConfig((s) => s.config?.keymap) ?? DEFAULT_KEYMAP;
  const [text, setText] = useState('');
  const [picked, setPicked] = useState<string | null>(null);
  const [slow, setSlow] = useState(false);
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<string | null>(null);
  const [result, setResult] = useState<{ result: PrintResult; keymap: string } | null>(null);
  const keymap = picked ?? configKeymap;
  const length = pasteLength(text);
  const tooLong = length > PASTE_MAX_CHARS;

  const send = async () => {
    setResult(null);
    const problem = checkPasteText(text);
    if (problem) {
      setRefused(t(problem));
      return;
    }
    setRefused(null);
    setBusy(true);
    // A modifier latched on the virtual keyboard would change every typed character.
    virtualKeyInput.releaseAll();
    try {
      setResult({ result: await pasteText({ text, keymap, slow }), keymap });
    } catch (err) {
      setRefused(errorMessage(err, t('paste.failed')));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal
      open
      title={t('paste.title')}
      onCancel={onClose}
      mask={{ closable: !busy }}
      destroyOnHidden
      footer={[
        <Button key="close" onClick={onClose} data-testid="paste-close">
          {t('paste.close')}
        </Button>,
        <Button
          key="send"
          type="primary"
          loading={busy}
          onClick={() => void send()}
          data-testid="paste-send"
        >
          {t('paste.send')}
        </Button>,
      ]}
    >
      <div data-testid="paste-dialog">
        <Input.TextArea
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setRefused(null);
          }}
          placeholder={t('paste.placeholder')}
          autoSize={{ minRows: 5, maxRows: 12 }}
          status={tooLong ? 'error' : undefined}
          data-testid="paste-text"
        />
        <Typography.Text
          type={tooLong ? 'danger' : 'secondary'}
          style={{ display: 'block', textAlign: 'right', fontSize: 12, margin: '4px 0 12px' }}
          data-testid="paste-count"
        >
          {t('paste.count', { n: length, max: PASTE_MAX_CHARS })}
        </Typography.Text>
        <div style={{ display: 'flex', alignItems: 'center', gap: 8, marginBottom: 8 }}>
          <Typography.Text>{t('paste.keymap')}</Typography.Text>
          <div style={{ flex: 1 }}>
            <DropdownSelect<string>
              value={keymap}
              options={KEYMAP_OPTIONS}
              onChange={setPicked}
              testId="paste-keymap"
            />
          </div>
        </div>
        <Checkbox
          checked={slow}
          onChange={(e) => setSlow(e.target.checked)}
          data-testid="paste-slow"
        >
          {t('paste.slow')}
        </Checkbox>
        {refused && (
          <Alert
            type="error"
            showIcon
            style={{ marginTop: 12 }}
            title={refused}
            data-testid="paste-error"
          />
        )}
        {result && (
          <div data-testid="paste-result" style={{ marginTop: 12 }}>
            <Alert type="success" showIcon title={t('paste.typed', { n: result.result.typed })} />
            {result.result.unmapped.length > 0 && (
              <Alert
                type="warning"
                showIcon
                style={{ marginTop: 8 }}
                data-testid="paste-unmapped"
                title={t('paste.unmapped', { keymap: result.keymap })}
                description={
                  <span style={{ fontFamily: 'monospace', wordBreak: 'break-all' }}>
                    {result.result.unmapped.map(describeChar).join(' ')}
                  </span>
                }
              />
            )}
          </div>
        )}
      </div>
    </Modal>
  );
}

/** Invisible characters are shown by code point, the others as themselves. */
function describeChar(ch: string): string {
  if (/^[\p{L}\p{N}\p{P}\p{S}]$/u.test(ch)) return ch;
  const cp = ch.codePointAt(0) ?? 0;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}
