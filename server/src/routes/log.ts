/**
 * `GET /api/log?seek=<s>&follow=<bool>` (kvmd's log reader, wire-protocol.md 1.8): the device
 * server's own log as text/plain, one `[YYYY-mm-dd HH:MM:SS kvm-console.service] --- ...` line
 * per record (kvmd's journal format), CRLF-terminated. `seek` keeps the last `seek` seconds
 * (0: everything kept, as kvmd's whole boot); `follow` keeps the answer open and sends new
 * lines as they are written (long-poll streaming), until the client goes, its session ends or
 * the server stops. At most LOG_STREAMS_MAX answers run at once.
 */
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import type { FastifyInstance } from 'fastify';
import { TooManyRequestsError } from '../errors';
import { maskText } from '../services/support/mask';
import { bool, fail } from '../validators';

/** Concurrent /api/log answers (followers included); the next one is 429. */
export const LOG_STREAMS_MAX = 4;
/** How often a follower looks for new lines. */
export const LOG_POLL_MS = 1000;
/** New bytes read per poll at most (a burst is sent over several polls). */
const FOLLOW_CHUNK = 256 * 1024;
/** A longer line is cut (records are small; this bounds a broken file). */
const LINE_MAX = 16 * 1024;
const SERVICE = 'kvm-console.service';

export class LogStreamsLimitError extends TooManyRequestsError {
  static override readonly defaultMessage = `At most ${LOG_STREAMS_MAX} log readers at once, please try again later`;
}

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARNING',
  50: 'ERROR',
  60: 'CRITICAL',
};
const HIDDEN_KEYS = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v']);

const pad = (n: number): string => String(n).padStart(2, '0');

/** kvmd's `%Y-%m-%d %H:%M:%S`, in the device's local time as the journal's is. */
export function logTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/**
 * One pino record as a kvmd log line; null when it is older than `since`. A line that is not a
 * record (a crash trace) is passed as it is, without a time to filter on. Secrets are masked
 * as in the log export (`auth_token=`/`password=` values, long hex tokens, public addresses):
 * a reader of this route (a dashboard, a support script) must not carry a session away.
 */
export function formatRecord(line: string, since: number): string | null {
  const text = line.length > LINE_MAX ? `${line.slice(0, LINE_MAX)}...` : line;
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return text.trim() === '' ? null : `${maskText(text)}\r\n`;
  }
  if (rec === null || typeof rec !== 'object' || typeof rec['time'] !== 'number') {
    return `${maskText(text)}\r\n`;
  }
  const time = rec['time'];
  if (time < since) return null;
  const level = LEVELS[rec['level'] as number] ?? 'INFO';
  const extra = Object.entries(rec)
    .filter(([k]) => !HIDDEN_KEYS.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const msg = typeof rec['msg'] === 'string' ? rec['msg'] : '';
  return maskText(
    `[${logTime(time)} ${SERVICE}] --- ${level} --- ${msg}${extra ? ` ${extra}` : ''}\r\n`,
  );
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The log's lines, oldest file first, then (with `follow`) new ones until `signal`. */
async function* readLog(
  path: string,
  files: number,
  since: number,
  follow: boolean,
  signal: AbortSignal,
): AsyncGenerator<string> {
  const paths = [...Array.from({ length: files - 1 }, (_, i) => `${path}.${files - 1 - i}`), path];
  let offset = 0;
  let ino: number | null = null;
  for (const p of paths) {
    const st = await stat(p).catch(() => null);
    if (!st) continue;
    if (p === path) {
      offset = st.size;
      ino = st.ino;
    }
    if (st.size === 0) continue;
    const input = createReadStream(p, { end: p === path ? Math.max(0, st.size - 1) : undefined });
    try {
      for await (const line of createInterface({ input, crlfDelay: Infinity })) {
        if (signal.aborted) return;
        const out = formatRecord(line, since);
        if (out !== null) yield out;
      }
    } finally {
      // readline leaves its input open when the loop is left early.
      input.destroy();
    }
  }
  let partial = '';
  while (follow && !signal.aborted) {
    await sleep(LOG_POLL_MS, signal);
    if (signal.aborted) return;
    const st = await stat(path).catch(() => null);
    if (!st) continue;
    // Rotated (a new file) or truncated: the new file is read from its start.
    if (st.ino !== ino || st.size < offset) {
      offset = 0;
      partial = '';
      ino = st.ino;
    }
    if (st.size === offset) continue;
    const length = Math.min(st.size - offset, FOLLOW_CHUNK);
    const fh = await open(path, 'r');
    let chunk: string;
    try {
      const buf = Buffer.alloc(length);
      const { bytesRead } = await fh.read(buf, 0, length, offset);
      offset += bytesRead;
      chunk = buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await fh.close();
    }
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    if (partial.length > LINE_MAX) {
      lines.push(partial);
      partial = '';
    }
    for (const line of lines) {
      const out = formatRecord(line, since);
      if (out !== null) yield out;
    }
  }
}

/** kvmd's valid_log_seek: a number >= 0 (a fraction is dropped); absent is 0. */
function seekArg(value: unknown): number {
  if (value === undefined || value === '') return 0;
  if (typeof value !== 'string' || !/^\s*\d+(\.\d*)?\s*$/.test(value)) {
    return fail('seek', value, 'log seek (a number >= 0)');
  }
  return Math.floor(Number(value));
}

export function logRoutes(
  app: FastifyInstance,
  opts: {
    dataDir: string;
    files: number;
    /** Calls back with a session's token hash when it ends (logout, expiry). */
    onSessionEnded: (listener: (hash: string) => void) => void;
  },
): void {
  const path = join(opts.dataDir, 'logs', 'server.log');
  const running = new Map<AbortController, string | null>();
  opts.onSessionEnded((hash) => {
    for (const [ac, owner] of running) if (owner === hash) ac.abort();
  });
  // Before the server waits for its open connections to end, or it would wait for the followers.
  app.addHook('preClose', async () => {
    for (const ac of running.keys()) ac.abort();
  });

  app.get('/api/log', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const seek = seekArg(q['seek']);
    const follow = bool('follow', q['follow'], false);
    if (running.size >= LOG_STREAMS_MAX) throw new LogStreamsLimitError();
    const ac = new AbortController();
    running.set(ac, request.auth?.tokenHash ?? null);
    const done = (): void => {
      ac.abort();
      running.delete(ac);
    };
    reply.raw.once('close', done);
    // A follower may wait long for a line: the idle timeout must not cut it.
    if (follow) request.raw.socket?.setTimeout(0);
    const since = seek > 0 ? Date.now() - seek * 1000 : 0;
    const body = Readable.from(readLog(path, opts.files, since, follow, ac.signal));
    body.once('end', done);
    body.once('error', done);
    return reply
      .header('content-type', 'text/plain; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(body);
  });
}
