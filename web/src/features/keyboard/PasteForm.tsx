import { useState, type ReactNode } from 'react';
import { Alert, Checkbox, Input, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { DEFAULT_KEYMAP, KEYMAPS } from '@kvm/protocol/enums';
import type { PrintResult } from '@kvm/protocol/hid/state';
import { DropdownSelect } from '../../components/DropdownSelect';
import { errorMessage } from '../../lib/api';
import { useConfig } from '../config/config-store';
import { virtualKeyInput } from './keyboard-session';
import { PASTE_MAX_CHARS, checkPasteText, pasteLength, pasteText } from './paste';

const KEYMAP_OPTIONS = KEYMAPS.map((name) => ({ value: name as string, label: name }));

export interface PasteForm {
  text: string;
  setText: (text: string) => void;
  keymap: string;
  pickKeymap: (keymap: string) => void;
  slow: boolean;
  setSlow: (slow: boolean) => void;
  busy: boolean;
  refused: string | null;
  result: { result: PrintResult; keymap: string } | null;
  send: () => Promise<void>;
}

/**
 * SPEC 7 paste text, the state and the send of one form: the device types the text on the remote
 * computer through a keymap (the `keymap` setting unless another is picked). Too long a text is
 * refused (SPEC 5) without calling the device. The toolbar's paste dialog and the toolbox's
 * clipboard group each hold one.
 */
export function usePasteForm(): PasteForm {
  const { t } = useTranslation();
  const configKeymap = useConfig((s) => s.config?.keymap) ?? DEFAULT_KEYMAP;
  const [text, setTextValue] = useState('');
  const [picked, setPicked] = useState<string | null>(null);
  const [slow, setSlow] = useState(false);
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<string | null>(null);
  const [result, setResult] = useState<PasteForm['result']>(null);
  const keymap = picked ?? configKeymap;

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

  const setText = (value: string) => {
    setTextValue(value);
    setRefused(null);
  };

  return {
    text,
    setText,
    keymap,
    pickKeymap: setPicked,
    slow,
    setSlow,
    busy,
    refused,
    result,
    send,
  };
}

/**
 * The fields of a paste form: the text with its count, the keymap, slow typing, then `actions`
 * (where the form has its own send button), the refusal and the result with the characters the
 * keymap cannot type. `idPrefix` keeps the test ids apart when both forms are on the page.
 */
export function PasteFields({
  form,
  idPrefix = 'paste',
  actions,
}: {
  form: PasteForm;
  idPrefix?: string;
  actions?: ReactNode;
}) {
  const { t } = useTranslation();
  const length = pasteLength(form.text);
  const tooLong = length > PASTE_MAX_CHARS;
  return (
    <div data-testid={`${idPrefix}-dialog`}>
      <Input.TextArea
        value={form.text}
        onChange={(e) => form.setText(e.target.value)}
        placeholder={t('paste.placeholder')}
        aria-label={t('paste.title')}
        autoSize={{ minRows: 5, maxRows: 12 }}
        status={tooLong ? 'error' : undefined}
        data-testid={`${idPrefix}-text`}
      />
      <Typography.Text
        type={tooLong ? 'danger' : 'secondary'}
        style={{ display: 'block', textAlign: 'right', fontSize: 12, margin: '4px 0 12px' }}
        data-testid={`${idPrefix}-count`}
      >
        {t('paste.count', { n: length, max: PASTE_MAX_CHARS })}
      </Typography.Text>
      <div style={{ display: 'flex', alignItems: 'center', gap: 8, marginBottom: 8 }}>
        <Typography.Text>{t('paste.keymap')}</Typography.Text>
        <div style={{ flex: 1 }}>
          <DropdownSelect<string>
            value={form.keymap}
            options={KEYMAP_OPTIONS}
            onChange={form.pickKeymap}
            testId={`${idPrefix}-keymap`}
          />
        </div>
      </div>
      <Checkbox
        checked={form.slow}
        onChange={(e) => form.setSlow(e.target.checked)}
        data-testid={`${idPrefix}-slow`}
      >
        {t('paste.slow')}
      </Checkbox>
      {actions}
      {form.refused && (
        <Alert
          type="error"
          showIcon
          style={{ marginTop: 12 }}
          title={form.refused}
          data-testid={`${idPrefix}-error`}
        />
      )}
      {form.result && (
        <div data-testid={`${idPrefix}-result`} style={{ marginTop: 12 }}>
          <Alert
            type="success"
            showIcon
            title={t('paste.typed', { n: form.result.result.typed })}
          />
          {form.result.result.unmapped.length > 0 && (
            <Alert
              type="warning"
              showIcon
              style={{ marginTop: 8 }}
              data-testid={`${idPrefix}-unmapped`}
              title={t('paste.unmapped', { keymap: form.result.keymap })}
              description={
                <span style={{ fontFamily: 'monospace', wordBreak: 'break-all' }}>
                  {form.result.result.unmapped.map(describeChar).join(' ')}
                </span>
              }
            />
          )}
        </div>
      )}
    </div>
  );
}

/** Invisible characters are shown by code point, the others as themselves. */
function describeChar(ch: string): string {
  if (/^[\p{L}\p{N}\p{P}\p{S}]$/u.test(ch)) return ch;
  const cp = ch.codePointAt(0) ?? 0;
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}
