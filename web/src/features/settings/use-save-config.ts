import { useCallback } from 'react';
import { useTranslation } from 'react-i18next';
import type { UserConfig } from '@kvm/protocol/settings';
import { errorMessage } from '../../lib/api';
import { saveConfig } from '../config/config-store';
import { useMessage } from '../../components/notify';

/**
 * Saves part of the server config (the settings kept per user on the device, SPEC 3); a
 * failure toasts SPEC 8's 'sync failed' through the generic handler (the server's message
 * when it gave one).
 */
export function useSaveConfig() {
  const message = useMessage();
  const { t } = useTranslation();
  return useCallback(
    (patch: Partial<UserConfig>) => {
      saveConfig(patch).catch((err: unknown) => {
        void message.error(errorMessage(err, t('common.syncFailed')));
      });
    },
    [message, t],
  );
}
