import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { INITIAL_SESSION, useSession } from '../features/session/session-store';
import { registerPreload } from '../lib/preload';
import { prestartConsole } from './prestart';

const { prestartVideo, checkLogin, prefetchVideo, config, fetchConsoleChunks } = vi.hoisted(() => {
  const config: { answer: Promise<unknown>; resolve: (v: unknown) => void } = {
    answer: Promise.resolve(),
    resolve: () => undefined,
  };
  return {
    prestartVideo: vi.fn(async () => undefined),
    checkLogin: vi.fn(async () => true),
    // the config's answer, held until the test gives it
    prefetchVideo: vi.fn(() => config.answer),
    config,
    fetchConsoleChunks: vi.fn(),
  };
});
vi.mock('../features/video/video-session', () => ({ prestartVideo }));
vi.mock('../features/video/video-prefetch', () => ({ prefetchVideo }));
vi.mock('../features/session/session-actions', () => ({ checkLogin }));
vi.mock('./console-chunks', () => ({ fetchConsoleChunks }));

const consoleChunks = vi.fn(async () => undefined);
registerPreload('console', consoleChunks);

beforeEach(() => {
  config.answer = new Promise((resolve) => (config.resolve = resolve));
});

afterEach(() => {
  localStorage.clear();
  prefetchVideo.mockClear();
  useSession.setState(INITIAL_SESSION);
  prestartVideo.mockClear();
  checkLogin.mockClear();
  consoleChunks.mockClear();
  fetchConsoleChunks.mockClear();
});

describe('prestartConsole (issue 28: the video starts before the main page renders)', () => {
  it('on the console route: the chunks and the video start once the login is known good', async () => {
    // no stored token: the first render does not wait
    await prestartConsole('/', '');
    expect(checkLogin).toHaveBeenCalledWith(null); // beside the init check, not after it
    expect(consoleChunks).not.toHaveBeenCalled();
    // the video's start holds the chunks back until its signalling is done
    let signalled = (): void => undefined;
    prestartVideo.mockImplementationOnce(
      () => new Promise<undefined>((r) => (signalled = () => r(undefined))),
    );
    useSession.setState({ isLoggedIn: true });
    expect(prefetchVideo).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(prestartVideo).toHaveBeenCalledTimes(1));
    await new Promise((r) => setTimeout(r, 0));
    expect(consoleChunks).not.toHaveBeenCalled();
    expect(fetchConsoleChunks).not.toHaveBeenCalled();
    signalled();
    await vi.waitFor(() => expect(consoleChunks).toHaveBeenCalledTimes(1));
    // fetched at once too, not only once the router's module has registered its preload
    expect(fetchConsoleChunks).toHaveBeenCalledTimes(1);
    // later session changes start nothing more
    useSession.setState({ isLoggedIn: false });
    useSession.setState({ isLoggedIn: true });
    expect(consoleChunks).toHaveBeenCalledTimes(1);
  });

  it('with a stored token: the loads start beside the login check, the video once the config came', async () => {
    localStorage.setItem(STORAGE_KEYS.authToken, 'stored');
    const first = prestartConsole('/', '');
    expect(prefetchVideo).toHaveBeenCalledTimes(1);
    await Promise.resolve();
    expect(prestartVideo).not.toHaveBeenCalled();
    expect(consoleChunks).not.toHaveBeenCalled(); // after the video's start
    config.resolve({ config: {} }); // the config came: the login is good
    await vi.waitFor(() => expect(prestartVideo).toHaveBeenCalledTimes(1));
    await first; // main.tsx renders after it
    await vi.waitFor(() => expect(consoleChunks).toHaveBeenCalledTimes(1));
    // the login check's answer starts nothing more
    useSession.setState({ isLoggedIn: true });
    await Promise.resolve();
    expect(prestartVideo).toHaveBeenCalledTimes(1);
    expect(prefetchVideo).toHaveBeenCalledTimes(1);
    expect(consoleChunks).toHaveBeenCalledTimes(1);
  });

  it('a stored token refused: the config fails, nothing starts the video', async () => {
    localStorage.setItem(STORAGE_KEYS.authToken, 'stale');
    config.answer = Promise.reject(new Error('403'));
    prestartConsole('/', '');
    useSession.setState({ isLoggedIn: false });
    await new Promise((r) => setTimeout(r, 0));
    expect(prestartVideo).not.toHaveBeenCalled();
    expect(consoleChunks).not.toHaveBeenCalled(); // the login page needs none of them
  });

  it('a video that cannot load (offline) still lets the console chunks load', async () => {
    prestartVideo.mockImplementationOnce(() => Promise.reject(new Error('offline')));
    await prestartConsole('/', '');
    useSession.setState({ isLoggedIn: true });
    await vi.waitFor(() => expect(consoleChunks).toHaveBeenCalledTimes(1));
  });

  it('a login that fails starts nothing', async () => {
    prestartConsole('/kvm/', '?id=abc');
    expect(checkLogin).not.toHaveBeenCalled(); // the guard stores the query's token first
    useSession.setState({ isLoggedIn: false });
    useSession.setState({ isLoggedIn: true });
    await Promise.resolve();
    expect(consoleChunks).not.toHaveBeenCalled();
    expect(prestartVideo).not.toHaveBeenCalled();
    expect(prefetchVideo).not.toHaveBeenCalled();
  });

  it('other routes (login, web terminal, upgrading) start nothing', () => {
    useSession.setState({ isLoggedIn: true });
    for (const path of ['/login', '/webterm', '/upgrading']) prestartConsole(path, '');
    expect(consoleChunks).not.toHaveBeenCalled();
    expect(checkLogin).not.toHaveBeenCalled();
  });
});
