import { describe, expect, it } from 'vitest';
import { ApiError, NetworkError } from '../../lib/api';
import { loginErrorMessage } from './login-errors';
import { confirmError, passwordError } from './password-rules';
import { twoFaCodeError } from './twofa-code';

describe('loginErrorMessage (SPEC 8)', () => {
  it('network failures say login.networkError, 2FA or not', () => {
    expect(loginErrorMessage(new NetworkError('network'), false)).toEqual({
      key: 'login.networkError',
    });
    expect(loginErrorMessage(new NetworkError('timeout'), true).key).toBe('login.networkError');
  });

  it('with 2FA on, a refusal is "password or 2FA code"', () => {
    expect(loginErrorMessage(new ApiError(403, {}), true)).toEqual({
      key: 'login.pwdOr2FaCodeInvalid',
    });
  });

  it('403 is a wrong password, anything else a failed login', () => {
    expect(loginErrorMessage(new ApiError(403, {}), false).key).toBe('login.pwdIncorrect');
    expect(loginErrorMessage(new ApiError(500, {}), false).key).toBe('login.loginFailed');
    expect(loginErrorMessage(new Error('x'), false).key).toBe('login.loginFailed');
  });

  it('429 adds the server message with the remaining seconds', () => {
    const err = new ApiError(429, {
      error: 'RateLimitError',
      error_msg: 'Too many failed login attempts. Please try again in 599 seconds.',
      remaining_time: 599,
    });
    expect(loginErrorMessage(err, false)).toEqual({
      key: 'login.loginFailed',
      detail: 'Too many failed login attempts. Please try again in 599 seconds.',
    });
    expect(loginErrorMessage(err, true).detail).toContain('599 seconds');
  });
});

describe('password rules (SPEC 5)', () => {
  it('needs 5 to 63 characters', () => {
    expect(passwordError('')).toBe('init.passwordInvalid');
    expect(passwordError('1234')).toBe('init.passwordInvalid');
    expect(passwordError('12345')).toBeNull();
    expect(passwordError('x'.repeat(63))).toBeNull();
    expect(passwordError('x'.repeat(64))).toBe('init.passwordInvalid');
  });

  it('needs a matching confirmation', () => {
    expect(confirmError('secret1', '')).toBe('init.confirmRequired');
    expect(confirmError('secret1', 'secret2')).toBe('init.passwordsDiffer');
    expect(confirmError('secret1', 'secret1')).toBeNull();
  });

  it('needs a 6-digit 2FA code', () => {
    expect(twoFaCodeError('')).toBe('twofa.codeRequired');
    expect(twoFaCodeError('12345')).toBe('twofa.codeRequired');
    expect(twoFaCodeError('12a456')).toBe('twofa.codeInvalid');
    expect(twoFaCodeError('123456')).toBeNull();
  });
});
