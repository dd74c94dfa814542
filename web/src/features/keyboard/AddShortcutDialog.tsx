import { useEffect, useState } from 'react';
import { Alert, Button, Input, Modal, Select, Space, Tag, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { KEYS } from '@kvm/protocol/hid/keys';
import { SHORTCUT_KEYS_MIN, SHORTCUTS_MAX, type Shortcut } from '@kvm/protocol/settings';
import { useMessage } from '../../components/notify';
import { errorMessage } from '../../lib/api';
import { saveConfig, useConfig } from '../config/config-store';
import { beginShortcutCapture } from './keyboard-session';
import { keyLabel, shortcutLabel, validateShortcut, withShortcut } from './shortcuts';

const NO_SHORTCUTS: readonly Shortcut[] = [];
/** shortcutSchema's label bound. */
const LABEL_MAX = 64;

const KEY_OPTIONS = KEYS.map((k) => ({
  value: k.code,
  label: keyLabel(k.code) === k.code ? k.code : `${keyLabel(k.code)} (${k.code})`,
}));

/**
 * SPEC 3/5 add a shortcut: its 2 to 4 keys are pressed on the virtual keyboard (forced to
 * floating meanwhile, SPEC 2) or picked from the list of every key the device can press, in the
 * order they are held. Saved into the `shortcuts` setting.
 */
export default function AddShortcutDialog({ onClose }: { onClose: () => void }) {
  const { t } = useTranslation();
  const message = useMessage();
  const saved = useConfig((s) => s.config?.shortcuts) ?? NO_SHORTCUTS;
  const [keys, setKeys] = useState<string[]>([]);
  const [label, setLabel] = useState('');
  const [tried, setTried] = useState(false);
  const [busy, setBusy] = useState(false);
  const [saveError, setSaveError] = useState<string | null>(null);

  // While the dialog is open the virtual keyboard picks keys instead of typing them.
  useEffect(() => beginShortcutCapture((code) => setKeys((list) => [...list, code])), []);

  const problem = validateShortcut(keys, saved);
  // Too few keys is only a problem once the user says the combination is complete.
  const shown = problem && (tried || keys.length >= SHORTCUT_KEYS_MIN) ? problem : null;
  const full = saved.length >= SHORTCUTS_MAX;

  const save = async () => {
    setTried(true);
    setSaveError(null);
    if (problem) return;
    setBusy(true);
    try {
      await saveConfig({ shortcuts: withShortcut(saved, keys, label) });
      void message.success(t('shortcuts.added'));
      onClose();
    } catch (err) {
      // The shortcuts are kept per user on the device: SPEC 8 'sync failed'.
      setSaveError(errorMessage(err, t('common.syncFailed')));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal
      open
      title={t('shortcuts.addTitle')}
      onCancel={busy ? undefined : onClose}
      mask={{ closable: false }}
      destroyOnHidden
      footer={[
        <Button key="cancel" onClick={onClose} disabled={busy} data-testid="shortcut-cancel">
          {t('common.cancel')}
        </Button>,
        <Button
          key="save"
          type="primary"
          loading={busy}
          disabled={full}
          onClick={() => void save()}
          data-testid="shortcut-save"
        >
          {t('shortcuts.save')}
        </Button>,
      ]}
    >
      <div data-testid="shortcut-add-dialog">
        <Typography.Paragraph type="secondary">{t('shortcuts.addHint')}</Typography.Paragraph>
        {full && (
          <Alert
            type="warning"
            showIcon
            style={{ marginBottom: 12 }}
            title={t('shortcuts.errors.limit', { max: SHORTCUTS_MAX })}
          />
        )}
        <Typography.Text strong>{t('shortcuts.keys')}</Typography.Text>
        <div
          data-testid="shortcut-keys"
          data-keys={keys.join(',')}
          style={{ display: 'flex', flexWrap: 'wrap', gap: 4, minHeight: 32, margin: '6px 0' }}
        >
          {keys.length === 0 ? (
            <Typography.Text type="secondary">{t('shortcuts.noKeys')}</Typography.Text>
          ) : (
            keys.map((code, i) => (
              <Tag
                key={`${i}-${code}`}
                title={code}
                closable
                onClose={(e) => {
                  e.preventDefault();
                  setKeys((list) => list.filter((_, j) => j !== i));
                }}
              >
                {keyLabel(code)}
              </Tag>
            ))
          )}
        </div>
        {keys.length > 0 && (
          <Typography.Paragraph data-testid="shortcut-preview">
            {shortcutLabel(keys)}
          </Typography.Paragraph>
        )}
        <Space.Compact style={{ width: '100%', marginBottom: 12 }}>
          <Select<string>
            showSearch={{ optionFilterProp: 'label' }}
            value={null}
            placeholder={t('shortcuts.pickKey')}
            options={KEY_OPTIONS}
            onChange={(code) => setKeys((list) => [...list, code])}
            style={{ flex: 1 }}
            data-testid="shortcut-key-select"
          />
          <Button
            onClick={() => setKeys([])}
            disabled={keys.length === 0}
            data-testid="shortcut-clear"
          >
            {t('shortcuts.clear')}
          </Button>
        </Space.Compact>
        <Input
          value={label}
          maxLength={LABEL_MAX}
          placeholder={t('shortcuts.label')}
          onChange={(e) => setLabel(e.target.value)}
          data-testid="shortcut-label"
        />
        {(shown || saveError) && (
          <Alert
            type="error"
            showIcon
            style={{ marginTop: 12 }}
            data-testid="shortcut-error"
            title={saveError ?? (shown ? t(shown.key, shown.values) : '')}
          />
        )}
      </div>
    </Modal>
  );
}
