/**
 * A size-rotated log file: `server.log`, then `server.log.1` ... `server.log.<files-1>`, oldest
 * dropped. Writes are synchronous appends (logs are small and must survive a crash right after
 * they were written); rotation happens before a write that would pass the size limit.
 */
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export class RotatingLogFile {
  private fd: number;
  private size: number;
  private lost = 0;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
    private readonly files: number,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    this.fd = openSync(path, 'a', 0o640);
    this.size = fstatSync(this.fd).size;
  }

  /**
   * pino destination interface. Never throws: a full disk or a failing card must not turn a log
   * line into a failed request or an uncaught exception (issue 9, item 19). Lines that could not
   * be written are counted and the count is written first when the log works again.
   */
  write(chunk: string): boolean {
    try {
      if (this.lost > 0) {
        this.append(
          `${JSON.stringify({ level: 40, time: Date.now(), msg: 'log lines lost', lost: this.lost })}\n`,
        );
        this.lost = 0;
      }
      this.append(chunk);
    } catch {
      this.lost += 1;
    }
    return true;
  }

  private append(chunk: string): void {
    const bytes = Buffer.byteLength(chunk);
    if (this.size > 0 && this.size + bytes > this.maxBytes) this.rotate();
    writeSync(this.fd, chunk);
    this.size += bytes;
  }

  /** The log files, newest first (for export). */
  list(): string[] {
    return [
      this.path,
      ...Array.from({ length: this.files - 1 }, (_, i) => `${this.path}.${i + 1}`),
    ];
  }

  private rotate(): void {
    closeSync(this.fd);
    rmSync(`${this.path}.${this.files - 1}`, { force: true });
    for (let i = this.files - 2; i >= 1; i -= 1) {
      try {
        renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`);
      } catch {
        // that generation does not exist yet
      }
    }
    if (this.files > 1) renameSync(this.path, `${this.path}.1`);
    else rmSync(this.path, { force: true });
    this.fd = openSync(this.path, 'a', 0o640);
    this.size = 0;
  }

  close(): void {
    closeSync(this.fd);
  }
}
