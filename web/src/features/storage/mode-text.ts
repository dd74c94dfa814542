import type { MsdMode } from '@kvm/protocol/enums';
import type { I18nKey } from '../../i18n/keys';

/** Per drive mode: the switch label, its hint and the upload section's accepted types. */
export const MODE_TEXT: Record<MsdMode, { label: I18nKey; hint: I18nKey; upload: I18nKey }> = {
  flash: {
    label: 'storage.modeFlash',
    hint: 'storage.modeFlashHint',
    upload: 'storage.upload.hintFlash',
  },
  cdrom: {
    label: 'storage.modeCdrom',
    hint: 'storage.modeCdromHint',
    upload: 'storage.upload.hintCdrom',
  },
};
