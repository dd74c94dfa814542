/** Shared by the MSD tests (not shipped): a recording driver and the whole app around it. */
import { mkdtemp } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, createContext } from '../../app';
import { buildConfig } from '../../config';
import type { MsdDriver, MsdDriverState, MsdImageMount } from '../../drivers/msd/types';
import { loadConfigDefaults } from '../../paths';
import { MsdService } from './msd-service';
import type { RemotePolicy } from './remote';

/** A driver that records what it was asked; `failNext` makes the next plug call reject. */
export class FakeMsd implements MsdDriver {
  readonly name = 'fake';
  online = true;
  calls: string[] = [];
  image: MsdImageMount | null = null;
  partition: string | null = null;
  failNext: string | null = null;
  /** While set, connectImage and connectPartition wait for it (a slow plug). */
  hold: Promise<void> | null = null;
  private readonly listeners = new Set<(s: MsdDriverState) => void>();

  getState(): MsdDriverState {
    return { online: this.online };
  }
  onState(listener: (s: MsdDriverState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  setOnline(online: boolean): void {
    this.online = online;
    for (const l of this.listeners) l(this.getState());
  }
  async connectImage(m: MsdImageMount): Promise<void> {
    this.calls.push(`connectImage ${m.path} cdrom=${m.cdrom} rw=${m.rw}`);
    if (this.hold) await this.hold;
    this.maybeFail();
    this.image = m;
  }
  async disconnectImage(): Promise<void> {
    this.calls.push('disconnectImage');
    this.image = null;
  }
  async connectPartition(dir: string): Promise<void> {
    this.calls.push(`connectPartition ${dir}`);
    if (this.hold) await this.hold;
    this.maybeFail();
    this.partition = dir;
  }
  async disconnectPartition(): Promise<void> {
    this.calls.push('disconnectPartition');
    this.partition = null;
  }
  async init(): Promise<void> {}
  async dispose(): Promise<void> {}
  private maybeFail(): void {
    const reason = this.failNext;
    this.failNext = null;
    if (reason) throw new Error(reason);
  }
}

export interface MsdTestApp {
  /** The whole server (buildApp), its MSD service on the recording driver. */
  app: FastifyInstance;
  msd: MsdService;
  driver: FakeMsd;
  dataDir: string;
  restarts: number;
  /** A session's credentials: every request of the tests goes through the real auth check. */
  headers: { token: string };
  /** app.inject with the session's credentials. */
  inject(opts: InjectOptions): Promise<LightMyRequestResponse>;
}

/**
 * The real app (createContext + buildApp on the testbed target, so the error mapping, envelope
 * and auth are the server's own) with the MSD service on a FakeMsd, and a logged-in session.
 */
export async function msdTestApp(
  dataDir?: string,
  opts: { progressIntervalMs?: number; uploadIdleMs?: number; remote?: RemotePolicy } = {},
): Promise<MsdTestApp> {
  const dir = dataDir ?? (await mkdtemp(join(tmpdir(), 'kvm-msd-')));
  const config = buildConfig(
    { data_dir: dir, target: 'testbed', webrtc: { stun_url: null } },
    loadConfigDefaults(),
  );
  const ctx = await createContext(config, '0.0.0-test');
  const driver = new FakeMsd();
  const out = { driver, dataDir: dir, restarts: 0 } as MsdTestApp;
  // The testbed has no virtual media: its service is swapped for one on the recording driver.
  ctx.msd.dispose();
  ctx.msd = await MsdService.open({
    dataDir: dir,
    driver,
    requestRestart: () => out.restarts++,
    ...opts,
  });
  out.msd = ctx.msd;
  out.app = await buildApp(ctx);
  // a session without the password hash (no init/login round trip per test)
  const token = await ctx.auth.sessions.create('admin', 3_600_000);
  out.headers = { token };
  out.inject = (o) =>
    out.app.inject({ ...o, headers: { ...out.headers, ...(o.headers ?? {}) } } as InjectOptions);
  return out;
}

/** Listens on an ephemeral loopback port; returns the base URL. */
export async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
}

export interface RawAnswer {
  status: number;
  body: string;
  json: () => { ok: boolean; result: Record<string, unknown> };
}

function collect(res: IncomingMessage): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    const finish = (): void => {
      const body = Buffer.concat(chunks).toString('utf8');
      resolve({ status: res.statusCode ?? 0, body, json: () => JSON.parse(body) });
    };
    res.on('end', finish);
    res.on('error', (err) => (chunks.length > 0 ? finish() : reject(err)));
    res.on('aborted', finish);
  });
}

/**
 * POSTs a body of `size` zero bytes generated on the fly (never allocated whole) with that
 * Content-Length. `cutAfter`: destroy the socket once that many bytes were sent. The answer
 * may come before the whole body went (an early refusal): it is returned as soon as it is
 * complete.
 */
export function postZeros(
  headers: Record<string, string>,
  url: string,
  size: number,
  opts: {
    cutAfter?: number;
    chunk?: number;
    /** Stop sending at `at` bytes until `until` resolves. */
    hold?: { at: number; until: Promise<unknown> };
  } = {},
): Promise<RawAnswer | 'cut'> {
  const chunkSize = opts.chunk ?? 1024 * 1024;
  const zeros = Buffer.alloc(chunkSize);
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (v: RawAnswer | 'cut'): void => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    };
    const req = httpRequest(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/octet-stream',
        'content-length': String(size),
      },
    });
    req.on('response', (res) => collect(res).then(done, reject));
    req.on('error', (err) => {
      if (opts.cutAfter !== undefined) done('cut');
      else if (!settled) setTimeout(() => (settled ? undefined : reject(err)), 500);
    });
    let sent = 0;
    const pumpMore = (): void => {
      while (sent < size) {
        if (opts.cutAfter !== undefined && sent >= opts.cutAfter) {
          req.destroy();
          setTimeout(() => done('cut'), 50);
          return;
        }
        const hold = opts.hold;
        if (hold && sent >= hold.at) {
          opts.hold = undefined;
          void hold.until.then(pumpMore);
          return;
        }
        const n = Math.min(chunkSize, size - sent, hold ? hold.at - sent : Infinity);
        sent += n;
        if (!req.write(n === chunkSize ? zeros : zeros.subarray(0, n))) {
          req.once('drain', pumpMore);
          return;
        }
      }
      req.end();
    };
    pumpMore();
  });
}

/** The uploader of postZerosFromChild, run by a separate node process. */
const CHILD_UPLOADER = `
const http = require('node:http');
const [url, sizeText, headersJson] = process.argv.slice(1);
const size = Number(sizeText);
const zeros = Buffer.alloc(1024 * 1024);
const req = http.request(url, {
  method: 'POST',
  headers: { ...JSON.parse(headersJson), 'content-type': 'application/octet-stream', 'content-length': sizeText },
});
req.on('response', (res) => {
  const chunks = [];
  res.on('data', (c) => chunks.push(c));
  res.on('end', () => process.stdout.write(JSON.stringify({ status: res.statusCode, body: Buffer.concat(chunks).toString() })));
});
req.on('error', (err) => process.stdout.write(JSON.stringify({ status: 0, body: err.message })));
let sent = 0;
const more = () => {
  while (sent < size) {
    const n = Math.min(zeros.length, size - sent);
    sent += n;
    if (!req.write(n === zeros.length ? zeros : zeros.subarray(0, n))) return req.once('drain', more);
  }
  req.end();
};
more();
`;

/**
 * postZeros from a child process: the test process then holds only the server, so its RSS is
 * the server's.
 */
export function postZerosFromChild(
  headers: Record<string, string>,
  url: string,
  size: number,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['-e', CHILD_UPLOADER, url, String(size), JSON.stringify(headers)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', () => {
      try {
        const { status, body } = JSON.parse(out) as { status: number; body: string };
        resolve({ status, body, json: () => JSON.parse(body) });
      } catch {
        reject(new Error(`uploader said: ${out}`));
      }
    });
  });
}

/** Makes every image write of `msd` fail with EIO (a dying disk), for the honest-error tests. */
export function failImageWrites(msd: MsdService): void {
  const storage = msd.storage;
  const create = storage.createWriter.bind(storage);
  storage.createWriter = async (name, size) => {
    const writer = await create(name, size);
    const handle = (writer as unknown as { handle: { writev: unknown } }).handle;
    handle.writev = async () => {
      throw Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO', syscall: 'write' });
    };
    return writer;
  };
}
