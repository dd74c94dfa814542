/**
 * The fleet's device client (client.ts) against the FAKE device agent: an answer and who it came
 * as, a streamed body under the window, an answer over the cap, an offline and a silent device.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AGENT_STREAM_WINDOW } from '@kvm/protocol';
import {
  closedAfterEach,
  FakeAgent,
  FakeDirectory,
  bigBody,
  startReplica,
} from '../agents/test-kit';
import {
  DEVICE_ANSWER_MAX,
  DeviceAnswerTooLargeError,
  DeviceOfflineError,
  DeviceTimeoutError,
  deviceRequest,
} from './client';

const { replicas, agents } = closedAfterEach();

const USER = { id: 'acc1', name: 'alice' };

async function setup() {
  const dir = new FakeDirectory();
  dir.add('dev1', 'acc1');
  const r = await startReplica(dir, 'fleet-a');
  replicas.push(r);
  const a = await (await FakeAgent.connect(r.url, { id: 'dev1', silentPaths: ['/slow'] })).ready();
  agents.push(a);
  return { r, a };
}

describe('deviceRequest', () => {
  it('asks the device as the user and reads its answer', async () => {
    const { r, a } = await setup();
    const res = await deviceRequest(r.relay, 'dev1', USER, {
      method: 'GET',
      path: '/api/echo-headers?x=1',
      headers: { accept: 'application/json' },
      timeoutMs: 5000,
    });
    expect(res.status).toBe(200);
    const j = JSON.parse(res.body.toString()) as { path: string; user: unknown };
    expect(j.path).toBe('/api/echo-headers?x=1');
    expect(j.user).toEqual(USER);
    expect(a.opens.at(-1)?.user).toEqual(USER);
  });

  it('streams a request body under the window, with its Content-Length', async () => {
    const { r, a } = await setup();
    const n = 8 * 1024 * 1024 + 17;
    const data = bigBody(n);
    // a slow source in 100 KiB pieces: the client never reads ahead of the window
    let read = 0;
    const source = Readable.from(
      (function* () {
        for (let off = 0; off < n; off += 100 * 1024) {
          read += Math.min(100 * 1024, n - off);
          yield data.subarray(off, off + 100 * 1024);
        }
      })(),
    );
    const res = await deviceRequest(r.relay, 'dev1', USER, {
      method: 'POST',
      path: '/upload',
      body: { stream: source, length: n },
      timeoutMs: 10_000,
    });
    const j = JSON.parse(res.body.toString()) as { bytes: number; sha256: string };
    expect(j.bytes).toBe(n);
    expect(j.sha256).toBe(createHash('sha256').update(data).digest('hex'));
    expect(read).toBe(n);
    expect(a.opens.at(-1)?.headers['content-length']).toBe(String(n));
    expect(a.maxUnacked).toBeLessThanOrEqual(AGENT_STREAM_WINDOW);
  });

  it('refuses an answer over the cap, and says offline and timeout with their own errors', async () => {
    const { r } = await setup();
    await expect(
      deviceRequest(r.relay, 'dev1', USER, {
        method: 'GET',
        path: `/big?n=${DEVICE_ANSWER_MAX + 1}`,
        timeoutMs: 5000,
      }),
    ).rejects.toBeInstanceOf(DeviceAnswerTooLargeError);
    const ok = await deviceRequest(r.relay, 'dev1', USER, {
      method: 'GET',
      path: `/big?n=${DEVICE_ANSWER_MAX}`,
      timeoutMs: 5000,
    });
    expect(ok.body.byteLength).toBe(DEVICE_ANSWER_MAX);
    await expect(
      deviceRequest(r.relay, 'dev9', USER, { method: 'GET', path: '/', timeoutMs: 5000 }),
    ).rejects.toBeInstanceOf(DeviceOfflineError);
    await expect(
      deviceRequest(r.relay, 'dev1', USER, { method: 'GET', path: '/slow', timeoutMs: 300 }),
    ).rejects.toBeInstanceOf(DeviceTimeoutError);
  });
});
