import { describe, expect, it } from 'vitest';
import en from './en.json';
import zh from './zh.json';
import { fleetT, setFleetLanguage } from './index';
import { leaves } from '../../i18n/leaves';

const enKeys = leaves(en);
const zhKeys = leaves(zh);

// The fleet console's sources, as text (tests excluded).
const sources = import.meta.glob(['../**/*.{ts,tsx}', '!../**/*.test.{ts,tsx}'], {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

describe('fleet dictionaries', () => {
  it('zh.json has exactly the keys of en.json, none empty', () => {
    expect([...zhKeys.keys()].sort()).toEqual([...enKeys.keys()].sort());
    for (const [key, value] of [...enKeys, ...zhKeys]) expect(value.trim(), key).not.toBe('');
  });

  it('keeps the same {{placeholders}} in both languages', () => {
    for (const [key, value] of enKeys) {
      const vars = (s: string) => [...s.matchAll(/\{\{(\w+)\}\}/g)].map((m) => m[1]).sort();
      expect(vars(zhKeys.get(key) ?? ''), key).toEqual(vars(value));
    }
  });

  it('every literal key in the code exists in en.json', () => {
    const used = new Set<string>();
    for (const text of Object.values(sources)) {
      for (const m of text.matchAll(/\bt\(\s*'([^']+)'/g)) used.add(m[1] ?? '');
      for (const m of text.matchAll(/'((?:nav|action|fieldError)\.[\w.]+)'/g)) used.add(m[1] ?? '');
    }
    expect(used.size).toBeGreaterThan(100);
    expect([...used].filter((k) => !enKeys.has(k))).toEqual([]);
  });

  it('switches to Chinese and back', () => {
    setFleetLanguage('zh');
    expect(fleetT('devices.open')).toBe(zh.devices.open);
    expect(document.documentElement.lang).toBe('zh');
    setFleetLanguage('en');
    expect(fleetT('devices.total', { n: 3 })).toBe('3 devices');
  });
});
