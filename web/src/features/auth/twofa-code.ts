/**
 * SPEC 5 2FA code messages. Our reading: 'Please enter 6-digit code' while the code is not six
 * characters long (empty included), 'Code is invalid.' for six characters that are not all
 * digits.
 */
import { TWOFA_CODE_LENGTH } from '@kvm/protocol/constants';
import { isValidTwoFaCode } from '@kvm/protocol/validation';

export function twoFaCodeError(code: string): 'twofa.codeRequired' | 'twofa.codeInvalid' | null {
  if (code.length !== TWOFA_CODE_LENGTH) return 'twofa.codeRequired';
  return isValidTwoFaCode(code) ? null : 'twofa.codeInvalid';
}
