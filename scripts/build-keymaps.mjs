#!/usr/bin/env node
// Builds the keymaps that Debian's QEMU does not ship, in QEMU's keymap file format, for paste
// and the virtual keyboard: en-us-altgr-intl (US international with AltGr dead keys). Its
// printing keys come from XKB's `us(altgr-intl)` symbols (xkb-data), every other key from
// QEMU's en-us keymap (qemu-system-data). Nothing is copied into the repo: the inputs are read
// from the Debian packages at setup time.
//
//   node scripts/build-keymaps.mjs [outDir] [--qemu-keymaps DIR] [--xkb-symbols DIR]
//
// outDir defaults to <repo>/.cache/keymaps. Writes only when the content changed (temp file +
// rename), prints one line per file written, exits 1 naming the Debian package of a missing
// input.
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'qemu-keymaps': { type: 'string', default: '/usr/share/qemu/keymaps' },
    'xkb-symbols': { type: 'string', default: '/usr/share/X11/xkb/symbols' },
  },
});
const outDir = resolve(positionals[0] ?? join(root, '.cache', 'keymaps'));

function fail(message) {
  console.error(`build-keymaps: ${message}`);
  process.exit(1);
}

function readInput(path, debianPackage) {
  if (!existsSync(path)) fail(`${path} is missing; install the Debian package ${debianPackage}`);
  return readFileSync(path, 'utf8');
}

/** XKB key names of the printing keys → PC/AT set-1 scan codes. */
const XKB_SCANCODES = new Map([
  ['TLDE', 0x29],
  ['BKSL', 0x2b],
  ['AC12', 0x2b],
  ['LSGT', 0x56],
  ['SPCE', 0x39],
  ['AE13', 0x7d],
  ['AB11', 0x73],
]);
const ROWS = [
  ['AE', 12, 0x02],
  ['AD', 12, 0x10],
  ['AC', 11, 0x1e],
  ['AB', 10, 0x2c],
];
for (const [row, count, first] of ROWS) {
  for (let i = 1; i <= count; i++)
    XKB_SCANCODES.set(`${row}${String(i).padStart(2, '0')}`, first + i - 1);
}

/** The AltGr key: QEMU's generated keymaps name it so on layouts with a third level. */
const RALT_SCANCODE = 0xb8;

/**
 * The `xkb_symbols "…" { … }` sections of an XKB symbols file, each as its statements in order:
 * includes and key definitions (the first group's levels; NoSymbol where a level is left open).
 */
function parseXkbSymbols(text) {
  const clean = text.replace(/\/\/.*$/gm, '').replace(/\/\*[\s\S]*?\*\//g, '');
  const sections = new Map();
  const header = /xkb_symbols\s+"([^"]+)"\s*\{/g;
  let m;
  while ((m = header.exec(clean))) {
    let depth = 1;
    let i = header.lastIndex;
    for (; i < clean.length && depth > 0; i++) {
      if (clean[i] === '{') depth++;
      else if (clean[i] === '}') depth--;
    }
    const body = clean.slice(header.lastIndex, i - 1);
    const statements = [];
    const statement = /include\s+"([^"]+)"|key\s+<(\w+)>\s*\{([^}]*)\}/g;
    let s;
    while ((s = statement.exec(body))) {
      if (s[1] !== undefined) {
        statements.push({ include: s[1] });
        continue;
      }
      const levels = /\[([^\]]*)\]/.exec(s[3] ?? '');
      if (!levels) continue;
      statements.push({ key: s[2], levels: levels[1].split(',').map((x) => x.trim()) });
    }
    if (!sections.has(m[1])) sections.set(m[1], statements);
  }
  return sections;
}

/**
 * A variant's keys with its includes of the same file applied first. Later definitions replace
 * earlier ones level by level, as XKB merges them; includes of other files (level3 switches and
 * the like) only choose modifiers.
 */
function resolveVariant(sections, fileName, variant, seen = new Set()) {
  const statements = sections.get(variant);
  if (!statements) fail(`no xkb_symbols "${variant}" in the XKB file ${fileName}`);
  if (seen.has(variant)) fail(`XKB include loop at ${fileName}(${variant})`);
  seen.add(variant);
  const keys = new Map();
  const merge = (name, levels) => {
    const merged = [...(keys.get(name) ?? [])];
    levels.forEach((sym, i) => {
      if (sym !== '' && sym !== 'NoSymbol') merged[i] = sym;
    });
    keys.set(name, merged);
  };
  for (const st of statements) {
    if (st.include !== undefined) {
      const inc = /^(\w+)(?:\(([^)]+)\))?$/.exec(st.include);
      if (!inc || inc[1] !== fileName) continue;
      const included = resolveVariant(sections, fileName, inc[2] ?? 'basic', seen);
      for (const [name, levels] of included) merge(name, levels);
    } else {
      merge(st.key, st.levels);
    }
  }
  seen.delete(variant);
  return keys;
}

/** Keymap lines for one XKB key: levels 1-4 are plain, Shift, AltGr, Shift+AltGr. */
function keyLines(scancode, levels) {
  const mods = ['', ' shift', ' altgr', ' shift altgr'];
  const hex = `0x${scancode.toString(16).padStart(2, '0')}`;
  return levels.slice(0, 4).flatMap((sym, i) => (sym ? [`${sym} ${hex}${mods[i]}`] : []));
}

function buildAltgrIntl() {
  const enUs = readInput(join(values['qemu-keymaps'], 'en-us'), 'qemu-system-data');
  const usPath = join(values['xkb-symbols'], 'us');
  const keys = resolveVariant(parseXkbSymbols(readInput(usPath, 'xkb-data')), 'us', 'altgr-intl');

  const replaced = new Map([[RALT_SCANCODE, ['ISO_Level3_Shift 0xb8']]]);
  for (const [name, levels] of keys) {
    const scancode = XKB_SCANCODES.get(name);
    if (scancode === undefined) fail(`unknown XKB key <${name}> in ${usPath}(altgr-intl)`);
    replaced.set(scancode, keyLines(scancode, levels));
  }

  const out = [
    '# en-us-altgr-intl, built by scripts/build-keymaps.mjs: the printing keys from',
    `# ${usPath}(altgr-intl), the other keys from QEMU's en-us keymap.`,
    '#    model   : pc105',
    '#    layout  : us',
    '#    variant : altgr-intl',
    '',
  ];
  const written = new Set();
  for (const raw of enUs.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || /^(map|include)\s/.test(line)) continue;
    const [, scan, ...words] = line.split(/\s+/);
    const scancode = Number.parseInt(scan ?? '', 16);
    const lines = replaced.get(scancode);
    if (!lines || words.includes('numlock')) {
      out.push(line);
    } else if (!written.has(scancode)) {
      out.push(...lines);
      written.add(scancode);
    }
  }
  for (const [scancode, lines] of replaced) if (!written.has(scancode)) out.push(...lines);
  return `${out.join('\n')}\n`;
}

function writeIfChanged(name, content) {
  const path = join(outDir, name);
  if (existsSync(path) && readFileSync(path, 'utf8') === content) return;
  mkdirSync(outDir, { recursive: true });
  const tmp = join(outDir, `.${name}.tmp-${process.pid}`);
  try {
    writeFileSync(tmp, content);
    renameSync(tmp, path);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // the temp file was never created
    }
    fail(`cannot write ${path}: ${err.message}`);
  }
  console.log(`build-keymaps: wrote ${path}`);
}

writeIfChanged('en-us-altgr-intl', buildAltgrIntl());
