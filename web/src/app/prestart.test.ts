import { afterEach, describe, expect, it, vi } from 'vitest';
import { INITIAL_SESSION, useSession } from '../features/session/session-store';
import { registerPreload } from '../lib/preload';
import { prestartConsole } from './prestart';

const { prestartVideo, checkLogin } = vi.hoisted(() => ({
  prestartVideo: vi.fn(async () => undefined),
  checkLogin: vi.fn(async () => true),
}));
vi.mock('../features/video/video-session', () => ({ prestartVideo }));
vi.mock('../features/session/session-actions', () => ({ checkLogin }));

const consoleChunks = vi.fn(async () => undefined);
registerPreload('console', consoleChunks);

afterEach(() => {
  useSession.setState(INITIAL_SESSION);
  prestartVideo.mockClear();
  checkLogin.mockClear();
  consoleChunks.mockClear();
});

describe('prestartConsole (issue 28: the video starts before the main page renders)', () => {
  it('on the console route: the chunks and the video start once the login is known good', async () => {
    prestartConsole('/', '');
    expect(checkLogin).toHaveBeenCalledWith(null); // beside the init check, not after it
    expect(consoleChunks).not.toHaveBeenCalled();
    useSession.setState({ isLoggedIn: true });
    expect(consoleChunks).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(prestartVideo).toHaveBeenCalledTimes(1));
    // later session changes start nothing more
    useSession.setState({ isLoggedIn: false });
    useSession.setState({ isLoggedIn: true });
    expect(consoleChunks).toHaveBeenCalledTimes(1);
  });

  it('a login that fails starts nothing', async () => {
    prestartConsole('/kvm/', '?id=abc');
    expect(checkLogin).not.toHaveBeenCalled(); // the guard stores the query's token first
    useSession.setState({ isLoggedIn: false });
    useSession.setState({ isLoggedIn: true });
    await Promise.resolve();
    expect(consoleChunks).not.toHaveBeenCalled();
    expect(prestartVideo).not.toHaveBeenCalled();
  });

  it('other routes (login, web terminal, upgrading) start nothing', () => {
    useSession.setState({ isLoggedIn: true });
    for (const path of ['/login', '/webterm', '/upgrading']) prestartConsole(path, '');
    expect(consoleChunks).not.toHaveBeenCalled();
    expect(checkLogin).not.toHaveBeenCalled();
  });
});
