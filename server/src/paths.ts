/**
 * Where the checkout's folders are, from this file's location. Works both from source
 * (server/src/paths.ts) and from the bundle (server/dist/main.js): both are two levels below
 * the repository root.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ConfigDefaults } from './config';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The checkout the launcher runs from. An upgraded version runs from a slot of the install
 * folder (REPO_ROOT is then the slot: its console, its package.json), but the default data
 * folder and `.cache` (guest image, keymaps) stay the checkout's, which the launcher names.
 */
export const FACTORY_ROOT = process.env['KVM_FACTORY_ROOT'] || REPO_ROOT;

export function loadConfigDefaults(): ConfigDefaults {
  return {
    dataDir: join(FACTORY_ROOT, '.data'),
    webDir: join(REPO_ROOT, 'web', 'dist'),
    keymapsDirs: ['/usr/share/qemu/keymaps', join(FACTORY_ROOT, '.cache', 'keymaps')],
  };
}

export function productVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
