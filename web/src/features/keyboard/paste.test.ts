import { afterEach, describe, expect, it, vi } from 'vitest';
import { envelope, stubFetch } from '../../test/fetch-stub';
import en from '../../i18n/en.json';
import { ApiError } from '../../lib/api';
import { PASTE_MAX_CHARS, checkPasteText, pasteLength, pasteText, pasteTimeoutMs } from './paste';

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('paste limit (SPEC 5 "Pasted text too long")', () => {
  it('is 8192 characters', () => {
    expect(PASTE_MAX_CHARS).toBe(8192);
    expect(checkPasteText('a'.repeat(8192))).toBeNull();
    expect(checkPasteText('a'.repeat(8193))).toBe('paste.tooLong');
    expect(en.paste.tooLong).toBe('Too many text for paste!');
  });

  it('counts characters as the device does: code points', () => {
    expect(pasteLength('😀é\n')).toBe(3);
    expect(checkPasteText('😀'.repeat(8192))).toBeNull();
    expect(checkPasteText('😀'.repeat(8192) + 'x')).toBe('paste.tooLong');
  });

  it('refuses an empty text', () => {
    expect(checkPasteText('')).toBe('paste.empty');
    expect(checkPasteText(' ')).toBeNull();
  });

  it('gives a long paste the time it takes to type', () => {
    expect(pasteTimeoutMs('', false)).toBe(30_000);
    expect(pasteTimeoutMs('a'.repeat(8192), false)).toBeGreaterThan(30_000 + 8192 * 2 * 3);
    expect(pasteTimeoutMs('abc', true)).toBeGreaterThan(pasteTimeoutMs('abc', false));
  });
});

describe('pasteText', () => {
  it('posts the raw text with limit=0 and the keymap', async () => {
    const { requests } = stubFetch({
      '/api/hid/print': () => envelope(200, { typed: 5, unmapped: ['€'] }),
    });
    const result = await pasteText({ text: 'héllo\n€', keymap: 'de', slow: false });
    expect(result).toEqual({ typed: 5, unmapped: ['€'] });
    const req = requests[0];
    expect(req?.method).toBe('POST');
    expect(req?.query.get('limit')).toBe('0');
    expect(req?.query.get('keymap')).toBe('de');
    expect(req?.query.has('slow')).toBe(false);
    expect(req?.body).toBe('héllo\n€');
    expect(req?.headers['content-type']).toBe('text/plain; charset=utf-8');
  });

  it('asks for slow typing', async () => {
    const { requests } = stubFetch({
      '/api/hid/print': () => envelope(200, { typed: 1, unmapped: [] }),
    });
    await pasteText({ text: 'a', keymap: 'en-us', slow: true });
    expect(requests[0]?.query.get('slow')).toBe('1');
  });

  it('fails with the server error', async () => {
    stubFetch({
      '/api/hid/print': () =>
        envelope(409, { error: 'HidBusyError', error_msg: 'Another paste is still being typed' }),
    });
    const err = await pasteText({ text: 'a', keymap: 'en-us', slow: false }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).error_msg).toBe('Another paste is still being typed');
  });
});
