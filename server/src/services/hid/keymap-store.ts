/**
 * The keymaps paste and the virtual keyboard use, read from folders of QEMU-format keymap files
 * (Debian's /usr/share/qemu/keymaps, then the ones scripts/build-keymaps.mjs builds) and parsed
 * on first use with X11's keysym names from keysymdef.h.
 */
import { constants, accessSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KEYMAPS, type KeymapLayout, type KeymapsResult } from '@kvm/protocol';
import type { StateProvider } from '../../ws/state-registry';
import {
  keymapLayout,
  parseKeymap,
  parseKeysymdef,
  type KeysymTable,
  type ParsedKeymap,
} from '@kvm/protocol/hid/keymap';

/** X11's keysym names (Debian package x11proto-dev). */
export const KEYSYMDEF_PATH = '/usr/include/X11/keysymdef.h';

/** A keymap name that is not one of KEYMAPS or has no readable file in the folders. */
export class UnknownKeymapError extends Error {
  constructor(readonly keymap: string) {
    super(`Unknown keymap: ${keymap}`);
    this.name = 'UnknownKeymapError';
  }
}

export interface KeymapStoreOptions {
  /** Folders of keymap files; where two hold a name, the earlier one's file is used. */
  dirs: readonly string[];
  /** keysymdef.h; default {@link KEYSYMDEF_PATH}. */
  keysymdef?: string;
  /** The keymap of {@link KeymapStore.get} and {@link KeymapStore.layout} without a name. */
  defaultName: string;
}

const KNOWN: ReadonlySet<string> = new Set(KEYMAPS);

export class KeymapStore {
  readonly defaultName: string;
  private readonly dirs: readonly string[];
  private readonly keysymdefPath: string;
  private keysyms: Promise<KeysymTable> | null = null;
  private readonly parsed = new Map<string, Promise<ParsedKeymap>>();

  constructor(options: KeymapStoreOptions) {
    this.dirs = options.dirs;
    this.keysymdefPath = options.keysymdef ?? KEYSYMDEF_PATH;
    this.defaultName = options.defaultName;
  }

  /**
   * The names of KEYMAPS that have a readable file, sorted. Looked up on every call (a few
   * dozen stats) so that keymaps built after the server started show up.
   */
  available(): string[] {
    const names = new Set<string>();
    for (const dir of this.dirs) {
      let entries: string[];
      try {
        entries = readdirSync(dir);
      } catch {
        continue;
      }
      for (const name of entries) {
        if (KNOWN.has(name) && !names.has(name) && readable(join(dir, name))) names.add(name);
      }
    }
    return [...names].sort();
  }

  /** `GET /api/hid/keymaps` and the `hid_keymaps` event. */
  result(): KeymapsResult {
    return { keymaps: { default: this.defaultName, available: this.available() } };
  }

  /**
   * The `hid_keymaps` event of `/api/ws`. Sent with each snapshot only: a keymap built later
   * shows up at the next connect or `GET /api/hid/keymaps`.
   */
  provider(): StateProvider {
    return {
      name: 'hid_keymaps',
      snapshot: () => [{ event_type: 'hid_keymaps', event: this.result() }],
      subscribe: () => () => undefined,
    };
  }

  /**
   * A keymap, parsed once and kept.
   * @throws UnknownKeymapError when the name is not in KEYMAPS or no folder has its file
   */
  get(name: string = this.defaultName): Promise<ParsedKeymap> {
    const cached = this.parsed.get(name);
    if (cached) return cached;
    const path = KNOWN.has(name) ? this.pathOf(name) : undefined;
    if (path === undefined) return Promise.reject(new UnknownKeymapError(name));
    const loading = Promise.all([readFile(path, 'utf8'), this.loadKeysyms()]).then(
      ([text, keysyms]) => parseKeymap(name, text, keysyms),
    );
    this.parsed.set(name, loading);
    // A failed read (file removed meanwhile, keysymdef.h missing) is retried on the next call.
    loading.catch(() => this.parsed.delete(name));
    return loading;
  }

  /**
   * The virtual keyboard's labels of a keymap.
   * @throws UnknownKeymapError as {@link get}
   */
  async layout(name: string = this.defaultName): Promise<KeymapLayout> {
    return keymapLayout(await this.get(name));
  }

  private pathOf(name: string): string | undefined {
    for (const dir of this.dirs) {
      const path = join(dir, name);
      if (readable(path)) return path;
    }
    return undefined;
  }

  private loadKeysyms(): Promise<KeysymTable> {
    this.keysyms ??= readFile(this.keysymdefPath, 'utf8').then(parseKeysymdef, (err: unknown) => {
      this.keysyms = null;
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(
        `Cannot read X11 keysym names from ${this.keysymdefPath} (Debian package x11proto-dev): ${why}`,
      );
    });
    return this.keysyms;
  }
}

function readable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
