import { useTranslation } from 'react-i18next';
import { BUILTIN_SHORTCUTS } from '@kvm/protocol/enums';
import type { Shortcut } from '@kvm/protocol/settings';
import { useMessage } from '../../components/notify';
import { errorMessage } from '../../lib/api';
import { hidSender } from '../input/input-session';
import { saveConfig, useConfig } from '../config/config-store';
import { virtualKeyInput } from './keyboard-session';
import { withoutShortcut } from './shortcuts';

const NO_SHORTCUTS: readonly Shortcut[] = [];

/** Presses the keys in order and releases them in reverse (SPEC 3 shortcut). */
export function sendShortcut(keys: readonly string[]): void {
  // Modifiers latched on the virtual keyboard would turn Alt+Tab into Ctrl+Alt+Tab.
  virtualKeyInput.releaseAll();
  hidSender.tap(keys);
}

/**
 * SPEC 2/3 shortcuts as the toolbar's menu and the toolbox's group list them: the built-ins, the
 * user's own (kept per user on the device), and the removal of one of those.
 */
export function useShortcutList(): {
  builtin: typeof BUILTIN_SHORTCUTS;
  saved: readonly Shortcut[];
  remove: (index: number) => Promise<void>;
} {
  const { t } = useTranslation();
  const message = useMessage();
  const saved = useConfig((s) => s.config?.shortcuts) ?? NO_SHORTCUTS;

  const remove = async (index: number) => {
    try {
      await saveConfig({ shortcuts: withoutShortcut(saved, index) });
      void message.success(t('shortcuts.deleted'));
    } catch (err) {
      // The shortcuts are kept per user on the device: SPEC 8 'sync failed'.
      void message.error(errorMessage(err, t('common.syncFailed')));
    }
  };

  return { builtin: BUILTIN_SHORTCUTS, saved, remove };
}
