/**
 * A JSON document in the data folder. Reads once, writes atomically, and serialises writes so
 * two saves never race on the rename.
 */
import { readFile } from 'node:fs/promises';
import { atomicWriteFile } from './atomic';

export class JsonFile<T> {
  private chain: Promise<void> = Promise.resolve();

  constructor(
    readonly path: string,
    private readonly parse: (raw: unknown) => T,
  ) {}

  /** Reads the file; a missing file yields `parse(undefined)`. A corrupt file throws. */
  async load(): Promise<T> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return this.parse(undefined);
      throw err;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw new Error(`${this.path}: not valid JSON`);
    }
    return this.parse(raw);
  }

  /** Writes `value` atomically; saves are applied in call order. */
  save(value: T): Promise<void> {
    const text = `${JSON.stringify(value, null, 2)}\n`;
    const next = this.chain.then(() => atomicWriteFile(this.path, text));
    this.chain = next.catch(() => undefined);
    return next;
  }
}
