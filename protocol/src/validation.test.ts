import { describe, expect, it } from 'vitest';
import { isFiniteNumber, isPlainText, parseFiniteNumber } from './validation';

describe('SPEC 5 generic numeric check', () => {
  it('accepts finite numbers only', () => {
    expect(isFiniteNumber(0)).toBe(true);
    expect(isFiniteNumber(-1.5)).toBe(true);
    expect(isFiniteNumber(Number.NaN)).toBe(false);
    expect(isFiniteNumber(Number.POSITIVE_INFINITY)).toBe(false);
    expect(isFiniteNumber('1')).toBe(false);
  });

  it('reads decimal text into a finite number, and nothing else', () => {
    expect(parseFiniteNumber('12')).toBe(12);
    expect(parseFiniteNumber(' 2.5 ')).toBe(2.5);
    expect(parseFiniteNumber('.5')).toBe(0.5);
    expect(parseFiniteNumber('-3')).toBe(-3);
    expect(parseFiniteNumber('1e3')).toBe(1000);
    expect(parseFiniteNumber(7)).toBe(7);
    // What Number() alone lets through:
    for (const bad of [
      '',
      '   ',
      '0x1f',
      '0b1',
      '1e999',
      'Infinity',
      '-Infinity',
      'NaN',
      '1_000',
      '1,5',
      '12px',
      '--1',
    ]) {
      expect(parseFiniteNumber(bad), bad).toBeNull();
    }
    expect(parseFiniteNumber(Number.NaN)).toBeNull();
    expect(parseFiniteNumber(null)).toBeNull();
    expect(parseFiniteNumber(['1'])).toBeNull();
  });
});

describe('SPEC 5 generic text pattern', () => {
  it('allows ASCII letters, digits, the space and some punctuation', () => {
    expect(isPlainText('USB Microphone')).toBe(true);
    expect(isPlainText('ops-team@example.com, +1 (555) 010-0199 #2')).toBe(true);
    expect(isPlainText('http://x/y:8')).toBe(true);
    expect(isPlainText('')).toBe(true);
  });

  it('refuses control characters, quotes, shell and markup characters, non-ASCII', () => {
    for (const bad of [
      'a\nb',
      'a\tb',
      '"x"',
      "it's",
      '$(id)',
      '`id`',
      'a;b',
      'a|b',
      '<b>',
      'a&b',
      'a\\b',
      '办公室',
      'é',
      '\u0000',
    ]) {
      expect(isPlainText(bad), JSON.stringify(bad)).toBe(false);
    }
    expect(isPlainText(42)).toBe(false);
  });

  it('bounds the length', () => {
    expect(isPlainText('abcd', 4)).toBe(true);
    expect(isPlainText('abcde', 4)).toBe(false);
  });
});
