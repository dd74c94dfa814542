/** SPEC 5 admin password rules, shared by the init page and the change-password form. */
import { isValidAdminPassword } from '@kvm/protocol/validation';
import type { I18nKey } from '../../i18n/keys';

export function passwordError(password: string): I18nKey | null {
  return isValidAdminPassword(password) ? null : 'init.passwordInvalid';
}

export function confirmError(password: string, confirm: string): I18nKey | null {
  if (!confirm) return 'init.confirmRequired';
  if (confirm !== password) return 'init.passwordsDiffer';
  return null;
}
