import { useEffect, useState } from 'react';
import { Switch, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { KEYMAPS, type Keymap } from '@kvm/protocol/enums';
import type { KeymapsResult } from '@kvm/protocol/hid/state';
import { DropdownSelect } from '../../components/DropdownSelect';
import { api } from '../../lib/api';
import { writeStorage } from '../../lib/storage';
import { useConfig } from '../config/config-store';
import { SettingsField as Field, SettingsGroup } from './SettingsGroup';
import { useSaveConfig } from './use-save-config';

/** The keymaps the device offers (GET /api/hid/keymaps); the 35 of SPEC 3 until it answers. */
function useKeymaps(): readonly string[] {
  const [available, setAvailable] = useState<readonly string[]>(KEYMAPS);
  useEffect(() => {
    const controller = new AbortController();
    api
      .get<KeymapsResult>('/hid/keymaps', { signal: controller.signal })
      .then((result) => {
        const list = result.keymaps?.available;
        if (Array.isArray(list) && list.length > 0) setAvailable([...list].sort());
      })
      .catch(() => undefined); // Offline or older device: the built-in list stays.
    return () => controller.abort();
  }, []);
  return available;
}

/** SPEC 2 settings: keyboard (layout of the remote computer for paste, keyboard control). */
export function KeyboardGroup() {
  const { t } = useTranslation();
  const save = useSaveConfig();
  const keymap = useConfig((s) => s.config?.keymap ?? 'en-us');
  const keyboardControl = useConfig((s) => s.config?.keyboard_control ?? true);
  const keymaps = useKeymaps();

  const changeKeymap = (next: string) => {
    writeStorage(STORAGE_KEYS.keymap, next);
    // The shared schema (saveConfig) refuses a name outside SPEC 3's list.
    save({ keymap: next as Keymap });
  };

  return (
    <SettingsGroup title={t('settings.keyboard.title')} testId="settings-group-keyboard">
      <Field label={t('settings.keyboard.keymap')}>
        <div data-testid="settings-keymap-field" data-value={keymap}>
          <DropdownSelect<string>
            testId="settings-keymap"
            value={keymap}
            options={keymaps.map((name) => ({ value: name, label: name }))}
            onChange={changeKeymap}
          />
        </div>
        <Typography.Text type="secondary" style={{ fontSize: 12 }}>
          {t('settings.keyboard.keymapHint')}
        </Typography.Text>
      </Field>
      <Field label={t('settings.keyboard.control')}>
        <Switch
          data-testid="settings-keyboard-control"
          checked={keyboardControl}
          onChange={(checked) => save({ keyboard_control: checked })}
        />
      </Field>
    </SettingsGroup>
  );
}
