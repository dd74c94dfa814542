/**
 * The fuzzer in `npm test`: a fixed seed and a bounded count. 3,000 requests over every route
 * of the app's route table (plus unknown paths and methods) through `app.inject`, then 5,000
 * frames over `/api/ws`, `/api/media/ws` and `/janus/ws` of the app listening on loopback. The
 * long mode against the real server process is `npm run fuzz -- --minutes N` (cli.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { rm } from 'node:fs/promises';
import { initAndLogin, newApp, PASSWORD, tempDataDir } from '../test-helpers';
import { FrameGenerator, HttpGenerator } from './generator';
import { authCheck, runHttp } from './http-runner';
import { injectTransport } from './inject-transport';
import { Findings } from './oracle';
import { Prng } from './prng';
import { SocketFuzzer } from './socket-runner';

const SEED = 20_250_609;
const HTTP_COUNT = 3000;
const FRAME_COUNT = 5000;

let app: FastifyInstance;
let dataDir: string;
let token: string;
const crashes: string[] = [];
const onCrash = (err: unknown): void => {
  crashes.push(String((err as Error)?.stack ?? err));
};

beforeAll(async () => {
  process.on('unhandledRejection', onCrash);
  process.on('uncaughtException', onCrash);
  dataDir = await tempDataDir();
  // Wake-on-LAN packets go to loopback, never to the LAN's broadcast address.
  app = await newApp(dataDir, { wol: { network: 'host', address: '127.0.0.1', port: 9 } });
  token = await initAndLogin(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await app?.close();
  process.off('unhandledRejection', onCrash);
  process.off('uncaughtException', onCrash);
  await rm(dataDir, { recursive: true, force: true });
});

function report(findings: Findings): string {
  return JSON.stringify(findings.list(), null, 1);
}

describe('fuzz (seed 20250609)', () => {
  it('answers 3,000 mutated requests on every route with no undocumented 5xx and only enveloped errors', async () => {
    const prng = new Prng(SEED);
    const findings = new Findings();
    const creds = { token, password: PASSWORD };
    const transport = injectTransport(app, new Prng(SEED + 1));
    const heapBefore = process.memoryUsage().heapUsed;
    const stats = await runHttp({
      gen: new HttpGenerator(prng, app.routeTable),
      transport,
      creds,
      findings,
      count: HTTP_COUNT,
      concurrency: 4,
      timeoutMs: 15_000,
    });
    token = creds.token;
    expect(stats.requests).toBe(HTTP_COUNT);
    // Every route of the table was reached (the generator picks from it).
    expect(Object.keys(stats.statuses).length).toBeGreaterThan(3);
    expect(report(findings)).toBe('[]');
    expect(crashes).toEqual([]);
    await expect.poll(() => authCheck(transport, token, 15_000), { timeout: 15_000 }).toBe(200);
    // Memory sanity: the run must not leave hundreds of MB behind.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(512 * 1024 * 1024);
  }, 180_000);

  it('survives 5,000 mutated frames on /api/ws, /api/media/ws and /janus/ws and still answers', async () => {
    const addr = app.server.address();
    if (!addr || typeof addr === 'string') throw new Error('no address');
    const findings = new Findings();
    const sockets = new SocketFuzzer({
      base: `ws://127.0.0.1:${addr.port}`,
      token: () => token,
      findings,
      probeEvery: 25,
      probeTimeoutMs: 10_000,
    });
    const gen = new FrameGenerator(new Prng(SEED + 2));
    try {
      while (sockets.stats.frames < FRAME_COUNT) await sockets.send(gen.next(sockets.janusIds));
      await sockets.checkAll();
    } finally {
      sockets.close();
    }
    expect(sockets.stats.frames).toBe(FRAME_COUNT);
    expect(report(findings)).toBe('[]');
    expect(crashes).toEqual([]);
    const status = await app.inject({ url: '/api/auth/check', headers: { token } });
    expect(status.statusCode).toBe(200);
  }, 180_000);
});
