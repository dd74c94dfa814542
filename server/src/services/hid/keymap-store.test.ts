import { spawnSync } from 'node:child_process';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { KEYMAPS } from '@kvm/protocol';
import {
  keyEventsToText,
  textToKeyEvents,
  type KeyStateEvent,
  type ParsedKeymap,
} from '@kvm/protocol/hid/keymap';
import { KeymapStore, UnknownKeymapError } from './keymap-store';
import { testTempDir } from '../../test-temp';

// These run against Debian's files (qemu-system-data, xkb-data, x11proto-dev), which the test
// setup installs; en-us-altgr-intl is built into a temp folder by the setup script itself.
const QEMU_DIR = '/usr/share/qemu/keymaps';
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const SCRIPT = join(REPO, 'scripts', 'build-keymaps.mjs');

function buildKeymaps(...args: string[]): {
  status: number | null;
  stdout: string;
  stderr: string;
} {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

let built = '';
let store: KeymapStore;

beforeAll(async () => {
  built = await testTempDir('keymaps');
  const r = buildKeymaps(built);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  store = new KeymapStore({ dirs: [QEMU_DIR, built], defaultName: 'en-us' });
});

/**
 * A sentence per layout in its language with its special letters (QEMU's `et` is Ethiopic, not
 * Estonian; its `bepo` is French Dvorak; `ja` types Latin only).
 */
const SAMPLES: Record<(typeof KEYMAPS)[number], string> = {
  ar: 'مرحبا بالعالم، كيف حالك؟',
  bepo: 'Où êtes-vous ? « ça » œuvre',
  cz: 'Příliš žluťoučký kůň úpěl ďábelské ódy',
  da: 'Æblegrød på Øen',
  de: 'Größe über Äpfel ^ ´ ` @ € ~',
  'de-ch': "Grüezi mitenand, Chäs und Röschti à l'été",
  'en-gb': '£5 for the colour grey, "quoted" & ¬',
  'en-us': 'The quick brown fox jumps over the lazy dog! ~`^',
  'en-us-altgr-intl': 'café naïve façade résumé ¿año? ñ ü ß',
  es: '¿Dónde está el niño? ¡Año! pingüino',
  et: 'ሰለመ በተ',
  fi: 'Hyvää päivää, Åland',
  fo: 'Føroyar, góðan dag',
  fr: 'Où êtes-vous ? « ça » Noël',
  'fr-be': 'Où êtes-vous ? « ça » Noël',
  'fr-ca': 'Où êtes-vous ? « ça » Noël',
  'fr-ch': 'Où êtes-vous ? « ça » Noël',
  hr: 'Čađava šuma, žuti ćup',
  hu: 'Árvíztűrő tükörfúrógép',
  is: 'Þórður ætlar að éta',
  it: 'Perché è così? Città, più',
  ja: 'Hello, world! (ASCII) 123 \\ _',
  lt: 'Ąžuolas, ėjo į šilą ūkanotą',
  lv: 'Āboli, ģimene, ķēde, ļoti, ņemt, čūska',
  mk: 'Здраво, свет! Ѓорѓи, Ќерка, Љубов, Њива, Џеб, Ѕвезда',
  nl: 'Één ijsje, café',
  no: 'Blåbærsyltetøy',
  pl: 'Zażółć gęślą jaźń',
  pt: 'Não há coração sem ação',
  'pt-br': 'Não há coração sem ação, lingüiça',
  ru: 'Съешь же ещё этих мягких французских булок, да выпей чаю',
  sl: 'Čestitke, žaba šteje',
  sv: 'Räksmörgås på ön',
  th: 'ภาษาไทย',
  tr: "Şişli'de ığdır, çöğü İstanbul",
};

const BASES = 'aeiouycnszgrlAEIOUYCNSZ';

/**
 * Every character the layout types with one key, the letters its dead keys make from common
 * bases, the accents that exist only as dead keys, and the sample sentence.
 */
function corpus(map: ParsedKeymap, sample: string): string {
  const composed: string[] = [];
  for (const { dead } of map.deadKeys.values()) {
    for (const base of BASES) {
      const c = (base + dead.mark).normalize('NFC');
      if ([...c].length === 1 && map.chars.has(base) && !map.chars.has(c)) composed.push(c);
    }
    if (dead.spacing !== null && !map.chars.has(dead.spacing)) composed.push(dead.spacing);
  }
  return `${sample}\n${[...map.chars.keys()].join('')}\t${composed.join('')}\n`;
}

const down = (key: string): KeyStateEvent => ({ key, state: true });
const up = (key: string): KeyStateEvent => ({ key, state: false });
const tap = (key: string): KeyStateEvent[] => [down(key), up(key)];

describe('every keymap', () => {
  it('is available', () => {
    expect(store.available()).toEqual([...KEYMAPS].sort());
  });

  it.each(KEYMAPS)('%s types its characters and reads back the same text', async (name) => {
    const map = await store.get(name);
    const text = corpus(map, SAMPLES[name]);
    const { events, typed, unmapped } = textToKeyEvents(text, map);
    expect(unmapped).toEqual([]);
    expect(typed).toBe([...text].length);
    expect(keyEventsToText(events, map)).toBe(text);
    expect(events.filter((e) => e.state).length).toBe(events.filter((e) => !e.state).length);
    expect(events.at(-1)).toEqual(up('Enter'));
  });

  it.each(KEYMAPS)('%s reports a character it lacks and does not type it', async (name) => {
    const map = await store.get(name);
    const r = textToKeyEvents(' 漢 ', map);
    expect(r.unmapped).toEqual(['漢']);
    expect(r.typed).toBe(2);
    expect(keyEventsToText(r.events, map)).toBe('  ');
  });
});

describe('key presses', () => {
  const events = async (name: string, text: string): Promise<KeyStateEvent[]> =>
    textToKeyEvents(text, await store.get(name)).events;

  it('en-us: Shift for capitals, held across consecutive ones', async () => {
    expect(await events('en-us', 'A')).toEqual([
      down('ShiftLeft'),
      ...tap('KeyA'),
      up('ShiftLeft'),
    ]);
    expect(await events('en-us', 'AB')).toEqual([
      down('ShiftLeft'),
      ...tap('KeyA'),
      ...tap('KeyB'),
      up('ShiftLeft'),
    ]);
    expect(textToKeyEvents('€', await store.get('en-us'))).toMatchObject({
      events: [],
      typed: 0,
      unmapped: ['€'],
    });
  });

  it('de: QWERTZ, AltGr, and the dead keys of the standard layout', async () => {
    expect(await events('de', 'z')).toEqual(tap('KeyY'));
    expect(await events('de', '@')).toEqual([down('AltRight'), ...tap('KeyQ'), up('AltRight')]);
    expect(await events('de', 'â')).toEqual([...tap('Backquote'), ...tap('KeyA')]);
    expect(await events('de', '^')).toEqual([...tap('Backquote'), ...tap('Space')]);
  });

  it('fr: AZERTY and the circumflex dead key', async () => {
    expect(await events('fr', 'a')).toEqual(tap('KeyQ'));
    expect(await events('fr', 'ê')).toEqual([...tap('BracketLeft'), ...tap('KeyE')]);
  });

  it('en-us-altgr-intl: accented letters on AltGr', async () => {
    expect(await events('en-us-altgr-intl', 'é')).toEqual([
      down('AltRight'),
      ...tap('KeyE'),
      up('AltRight'),
    ]);
    expect(await events('en-us-altgr-intl', "'")).toEqual(tap('Quote'));
  });

  it('sl: the layout block after the US block wins (QWERTZ)', async () => {
    expect(await events('sl', 'z')).toEqual(tap('KeyY'));
    expect(await events('sl', 'y')).toEqual(tap('KeyZ'));
  });
});

describe('KeymapStore', () => {
  it('draws dead keys with their accent', async () => {
    const de = await store.layout('de');
    expect(de.name).toBe('de');
    expect(de.keys['KeyY']).toMatchObject({ base: 'z', shift: 'Z' });
    expect(de.keys['Backquote']).toMatchObject({ base: '^', shift: '°' });
    expect(de.keys['Equal']).toMatchObject({ base: '´', shift: '`' });
    expect(de.keys['KeyQ']).toMatchObject({ base: 'q', altgr: '@' });
  });

  it('parses each keymap once', async () => {
    expect(await store.get('de')).toBe(await store.get('de'));
    expect(await store.get()).toBe(await store.get('en-us'));
  });

  it('lists regular files named like keymaps, the first folder winning', async () => {
    const a = await testTempDir('keymaps-a');
    const b = await testTempDir('keymaps-b');
    await writeFile(join(a, 'de'), 'a 0x10\n');
    await writeFile(join(b, 'de'), 'a 0x1e\n');
    await writeFile(join(b, 'fr'), 'a 0x10\n');
    await writeFile(join(b, 'not-a-keymap'), 'a 0x10\n');
    await mkdir(join(b, 'it'));
    const own = new KeymapStore({
      dirs: [join(a, 'missing'), a, b],
      defaultName: 'de',
    });
    expect(own.available()).toEqual(['de', 'fr']);
    expect((await own.get('de')).chars.get('a')).toEqual([
      { code: 'KeyQ', shift: false, altgr: false },
    ]);
    await expect(own.get('it')).rejects.toBeInstanceOf(UnknownKeymapError);
    await expect(own.get('not-a-keymap')).rejects.toBeInstanceOf(UnknownKeymapError);
    await expect(own.layout('xx')).rejects.toBeInstanceOf(UnknownKeymapError);
  });

  it('names the Debian package when keysymdef.h is missing', async () => {
    const own = new KeymapStore({
      dirs: [QEMU_DIR],
      keysymdef: join(built, 'no-keysymdef.h'),
      defaultName: 'en-us',
    });
    await expect(own.get('en-us')).rejects.toThrow(/x11proto-dev/);
  });
});

describe('scripts/build-keymaps.mjs', () => {
  it('writes a QEMU-format en-us-altgr-intl and leaves it alone when up to date', async () => {
    const file = join(built, 'en-us-altgr-intl');
    const text = await readFile(file, 'utf8');
    expect(text).toMatch(/^# en-us-altgr-intl/);
    expect(text).toContain('\neacute 0x12 altgr\n');
    expect(text).toContain('\ndead_acute 0x28 altgr\n');
    const before = (await stat(file)).mtimeMs;
    const again = buildKeymaps(built);
    expect(again).toMatchObject({ status: 0, stdout: '', stderr: '' });
    expect((await stat(file)).mtimeMs).toBe(before);
  });

  it('names the Debian package of a missing input', async () => {
    const out = await testTempDir('keymaps');
    const noXkb = buildKeymaps(out, '--xkb-symbols', join(out, 'none'));
    expect(noXkb.status).toBe(1);
    expect(noXkb.stderr).toMatch(/install the Debian package xkb-data/);
    const noQemu = buildKeymaps(out, '--qemu-keymaps', join(out, 'none'));
    expect(noQemu.status).toBe(1);
    expect(noQemu.stderr).toMatch(/install the Debian package qemu-system-data/);
  });
});
