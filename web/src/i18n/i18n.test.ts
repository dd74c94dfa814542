import { describe, expect, it } from 'vitest';
import en from './en.json';
import zh from './zh.json';
import { initI18n } from './index';
import { leaves } from './leaves';

const enKeys = leaves(en);
const zhKeys = leaves(zh);

// Every source file of the console, as text (tests and declarations excluded; the fleet console,
// web/src/fleet/, has its own dictionaries and their test).
const sources = import.meta.glob(
  ['../**/*.{ts,tsx}', '!../**/*.test.{ts,tsx}', '!../**/*.d.ts', '!../fleet/**'],
  {
    query: '?raw',
    import: 'default',
    eager: true,
  },
) as Record<string, string>;

describe('dictionaries', () => {
  it('zh.json has exactly the keys of en.json', () => {
    expect([...zhKeys.keys()].sort()).toEqual([...enKeys.keys()].sort());
  });

  it('has no empty texts', () => {
    for (const [key, value] of [...enKeys, ...zhKeys]) {
      expect(value.trim(), key).not.toBe('');
    }
  });

  it('keeps HDMI, USB, EDID, ATX and WebRTC untranslated', () => {
    for (const [key, value] of enKeys) {
      for (const term of ['HDMI', 'USB', 'EDID', 'ATX', 'WebRTC']) {
        if (value.includes(term)) expect(zhKeys.get(key), key).toContain(term);
      }
    }
  });

  it('carries the login texts of SPEC 8 word for word', () => {
    expect(en.login.pwdIncorrect).toBe('Password is not correct!');
    expect(en.login.pwdOr2FaCodeInvalid).toBe('Password or 2FA code is not correct!');
    expect(en.login.loginExpired).toBe('Login expired, Please login again.');
    expect(en.login.networkError).toBe('Network error! please check your network!');
    expect(en.init.passwordsDiffer).toBe('Entered passwords differ');
    expect(en.init.confirmRequired).toBe('Please confirm your password!');
    expect(en.init.passwordInvalid).toBe('Password is invalid');
    expect(en.init.initFailed).toBe('Init failed!');
    expect(en.twofa.codeRequired).toBe('Please enter 6-digit code');
    expect(en.twofa.codeInvalid).toBe('Code is invalid.');
    expect(en.settings.security.twofaSetFailed).toBe('Setting failed, please check your code!');
  });
});

describe('keys used in the code', () => {
  it('every literal t() key exists in en.json', () => {
    const used = new Set<string>();
    for (const text of Object.values(sources)) {
      for (const match of text.matchAll(/\bt\(\s*'([^']+)'/g)) used.add(match[1] ?? '');
      // Keys passed around as I18nKey values: 'group.name' literals that look like keys.
      for (const match of text.matchAll(
        /'((?:common|login|init|twofa|main|status|settings|help|upgrading)\.[\w.]+)'/g,
      )) {
        used.add(match[1] ?? '');
      }
    }
    expect(used.size).toBeGreaterThan(20);
    const missing = [...used].filter((key) => !enKeys.has(key));
    expect(missing).toEqual([]);
  });

  it('t() is typed by en.json: a missing key does not compile', () => {
    const i18n = initI18n('en');
    // @ts-expect-error: not a key of en.json (tsc -p web fails if the key type stops working).
    const missing = i18n.t('no.such.key');
    expect(missing).toBe('no.such.key');
    expect(i18n.t('login.pwdIncorrect')).toBe('Password is not correct!');
  });

  it('switches to Chinese', async () => {
    const i18n = initI18n('en');
    await i18n.changeLanguage('zh');
    expect(i18n.t('login.pwdIncorrect')).toBe(zh.login.pwdIncorrect);
    await i18n.changeLanguage('en');
  });
});
