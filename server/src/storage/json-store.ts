/**
 * A JSON document in the data folder. Reads once, writes atomically, and serialises writes so
 * two saves never race on the rename.
 */
import { open, readFile, rename } from 'node:fs/promises';
import { SerialQueue } from '../sync/serial-queue';
import { atomicWriteFile } from './atomic';

/**
 * The file is there and readable but its content is not a document we can use (not JSON, over
 * the size bound, refused by the parser). Distinct from an I/O or permission error, which says
 * nothing about the content and must not be treated as "replace with defaults".
 */
export class CorruptFileError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

export interface JsonFileOptions {
  /** A larger file is corrupt without being read into memory. */
  maxBytes?: number;
  /**
   * The name a corrupt file is set aside as (a document's own documented name); default
   * `<name>.bad-<time>`.
   */
  asideName?: (path: string) => string;
}

/** The default name of a file set aside: `<name>.bad-<ISO time, ':' and '.' as '-'>`. */
export function timedAsideName(path: string): string {
  return `${path}.bad-${new Date().toISOString().replace(/[:.]/g, '-')}`;
}

/** The two log levels loadOrDefaults writes at (the server's Logger has them). */
export interface JsonFileLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export class JsonFile<T> {
  private readonly writes = new SerialQueue();

  constructor(
    readonly path: string,
    private readonly parse: (raw: unknown) => T,
    private readonly opts: JsonFileOptions = {},
  ) {}

  /**
   * Reads the file; a missing file yields `parse(undefined)`. Bad content throws
   * CorruptFileError; an I/O or permission error is thrown as it is.
   */
  async load(): Promise<T> {
    let text: string;
    try {
      text = await this.read();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return this.parse(undefined);
      throw err;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new CorruptFileError(this.path, 'not valid JSON');
    }
    try {
      return this.parse(raw);
    } catch (err) {
      throw new CorruptFileError(this.path, (err as Error).message);
    }
  }

  /**
   * `load()` for a store that must start whatever the file holds: a corrupt file is set aside
   * and `defaults` served (a warning); an unreadable one (I/O, permissions) serves `defaults`
   * and stays where it is (an error), since its content may still be good. `what` names the
   * document in the log lines.
   */
  async loadOrDefaults(defaults: () => T, log: JsonFileLog, what: string): Promise<T> {
    try {
      return await this.load();
    } catch (err) {
      if (err instanceof CorruptFileError) {
        const aside = await this.setAside().catch((e: unknown) => `(not moved: ${String(e)})`);
        log.warn(
          { file: this.path, reason: err.reason, aside },
          `${what} unusable: defaults served, the file kept aside`,
        );
      } else {
        log.error(
          { file: this.path, code: (err as NodeJS.ErrnoException).code, err },
          `${what} unreadable: defaults served until the data folder is fixed`,
        );
      }
      return defaults();
    }
  }

  /**
   * Moves a corrupt file aside as `asideName(path)`, by default `<name>.bad-<time>` (kept for
   * whoever wants to look at it, never read again; an older one of the same name is replaced);
   * returns the new path.
   */
  async setAside(): Promise<string> {
    const aside = (this.opts.asideName ?? timedAsideName)(this.path);
    await rename(this.path, aside);
    return aside;
  }

  /** Writes `value` atomically; saves are applied in call order. */
  save(value: T): Promise<void> {
    const text = `${JSON.stringify(value, null, 2)}\n`;
    return this.writes.run(() => atomicWriteFile(this.path, text));
  }

  /** Resolves once every save asked for so far has landed or failed (shutdown, tests). */
  idle(): Promise<void> {
    return this.writes.idle();
  }

  private async read(): Promise<string> {
    const max = this.opts.maxBytes;
    if (max === undefined) return readFile(this.path, 'utf8');
    const handle = await open(this.path, 'r');
    try {
      const { size } = await handle.stat();
      if (size > max) throw new CorruptFileError(this.path, `${size} bytes, over ${max}`);
      return await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  }
}
