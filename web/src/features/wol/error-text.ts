import { useTranslation } from 'react-i18next';
import { WOL_DEVICES_MAX, WOL_NAME_MAX } from '@kvm/protocol/wol';
import { WOL_ERROR_TEXT, type WolFieldError } from './wol';

/** The text of a field's check, for the add form and the rename dialog. */
export function useErrorText() {
  const { t } = useTranslation();
  return (error: WolFieldError | undefined | null) =>
    error
      ? t(WOL_ERROR_TEXT[error], { max: error === 'tooMany' ? WOL_DEVICES_MAX : WOL_NAME_MAX })
      : undefined;
}
