import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { form, initAndLogin, PASSWORD, tempDataDir } from '../../test-helpers';
import { FAST_HASHER, LogSink, newAuthApp, TestClock } from './auth-test-kit';
import { MAX_SESSIONS_PER_USER, SessionStore } from './sessions';

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

describe('session caps', () => {
  it(`keeps at most ${MAX_SESSIONS_PER_USER} sessions per user; the one used longest ago ends`, async () => {
    const dir = await tempDataDir();
    const path = join(dir, 'sessions.json');
    const clock = new TestClock();
    const store = await SessionStore.open(path, { now: clock.now });
    const ended: Array<[string, string]> = [];
    store.on('ended', (hash, reason) => ended.push([hash, reason]));
    const tokens: string[] = [];
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i += 1) {
      tokens.push(await store.create('admin', 3_600_000));
      clock.advance(1000);
    }
    // the first is used again, so the second is now the one used longest ago
    expect(store.touch(tokens[0] ?? '')).not.toBeNull();
    clock.advance(1000);
    const newest = await store.create('admin', 3_600_000);
    expect(store.size).toBe(MAX_SESSIONS_PER_USER);
    expect(ended).toEqual([[expect.any(String), 'evicted']]);
    expect(store.touch(tokens[1] ?? '')).toBeNull();
    expect(store.touch(tokens[0] ?? '')).not.toBeNull();
    expect(store.touch(newest)).not.toBeNull();
    const saved = JSON.parse(await readFile(path, 'utf8')) as unknown[];
    expect(saved).toHaveLength(MAX_SESSIONS_PER_USER);
  });

  it('closes the evicted session for its holder (the token stops working)', async () => {
    app = await newAuthApp({ passwords: FAST_HASHER });
    const first = await initAndLogin(app);
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i += 1) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        ...form({ user: 'admin', passwd: PASSWORD }),
      });
      expect(res.statusCode).toBe(200);
    }
    expect(
      (await app.inject({ url: '/api/auth/check', headers: { token: first } })).statusCode,
    ).toBe(403);
  });
});

describe('sessions file', () => {
  it('starts with no sessions when the file is missing', async () => {
    const store = await SessionStore.open(join(await tempDataDir(), 'sessions.json'));
    expect(store.size).toBe(0);
  });

  it('moves a corrupt file aside with a warning and starts with none', async () => {
    const dir = await tempDataDir();
    await writeFile(join(dir, 'sessions.json'), '{"broken": ');
    const log = new LogSink();
    const store = await SessionStore.open(join(dir, 'sessions.json'), { log: log.logger });
    expect(store.size).toBe(0);
    const warn = log.find('sessions file unreadable; moved aside');
    expect(warn).toHaveLength(1);
    expect(warn[0]?.['level']).toBe(40);
    const names = await readdir(dir);
    const aside = names.find((n) => n.startsWith('sessions.json.corrupt-'));
    expect(aside).toBeDefined();
    expect(await readFile(join(dir, aside ?? ''), 'utf8')).toBe('{"broken": ');
  });

  it('stops the start on a read error other than a missing file', async () => {
    const dir = await tempDataDir();
    // A folder where the file should be: EISDIR, like EACCES or EIO an unusable data folder.
    await mkdir(join(dir, 'sessions.json'));
    await expect(SessionStore.open(join(dir, 'sessions.json'))).rejects.toThrow(
      /sessions\.json: cannot be read \(EISDIR\)/,
    );
  });

  it('refuses a login whose session cannot be saved, logs it, and hands out no token', async () => {
    const dir = await tempDataDir();
    const log = new LogSink();
    app = await newAuthApp({ dataDir: dir, log });
    const token = await initAndLogin(app);
    // Make the next save fail: the rename onto a non-empty folder cannot succeed.
    const path = join(dir, 'sessions.json');
    await rm(path);
    await mkdir(path);
    await writeFile(join(path, 'keep'), 'x');
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/login',
      ...form({ user: 'admin', passwd: PASSWORD }),
    });
    expect(res.statusCode).toBe(500);
    expect(res.json().result).toEqual({
      error: 'InternalError',
      error_msg: 'The session could not be saved',
    });
    expect(String(res.headers['set-cookie'] ?? '')).not.toContain('auth_token=');
    expect(log.find('session not saved; the login is refused')).toHaveLength(1);
    // the earlier session is untouched, and no other session appeared
    expect((await app.inject({ url: '/api/auth/check', headers: { token } })).statusCode).toBe(200);
    expect(app.ctx.auth.sessions.size).toBe(1);
    await rm(path, { recursive: true });
  });

  it('logs a failed lazy flush instead of dropping it', async () => {
    const dir = await tempDataDir();
    const path = join(dir, 'sessions.json');
    const log = new LogSink();
    const store = await SessionStore.open(path, { log: log.logger });
    const token = await store.create('admin', 3_600_000);
    await rm(path);
    await mkdir(path);
    await writeFile(join(path, 'keep'), 'x');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      store.touch(token); // schedules the lazy flush of the slid expiry
      await vi.advanceTimersByTimeAsync(31_000);
    } finally {
      vi.useRealTimers();
    }
    await vi.waitFor(() => expect(log.find('sessions not saved')).toHaveLength(1));
    expect(log.find('sessions not saved')[0]?.['level']).toBe(50);
  });
});
