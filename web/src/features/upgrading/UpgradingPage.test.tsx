import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import en from '../../i18n/en.json';
import zh from '../../i18n/zh.json';
import { i18n } from '../../i18n';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { render, type Rendered } from '../../test/render';
import {
  UPGRADE_FROM_KEY,
  UPGRADE_ID_KEY,
  UPGRADE_SAVE_CONFIG_KEY,
} from '../upgrade/upgrade-store';
import UpgradingPage from './UpgradingPage';

const OLD = 'V1.2.0 release1';
const NEW = 'V1.3.0 release1';
const ID = 'up-7';
const REASON =
  'The new version V1.3.0 release1 exited with code 1 before it was healthy; V1.2.0 release1 is back';

/** How the last upgrade ended, as the launcher records it (protocol UpgradeOutcome). */
function outcome(id: string, result: 'success' | 'failed', reason: string | null = null) {
  return {
    id,
    result,
    from_version: OLD,
    to_version: NEW,
    reason,
    save_config: true,
    finished_at: '2026-11-24T08:00:00.000Z',
  };
}

/** The device as the page sees it. */
interface Device {
  /** down: no answer (restarting); 5xx: answers 503; unauthorized: the session is unknown. */
  state: 'up' | 'down' | '5xx' | 'unauthorized';
  version: string;
  /** status.last_upgrade; undefined: a status without the field (a device before outcomes). */
  last?: (ReturnType<typeof outcome> & { reason_key?: unknown }) | null;
  /** false: the device has no /upgrade/status (404). */
  statusRoute: boolean;
}

let view: Rendered | undefined;
let requests: RecordedRequest[];
let device: Device;
let goRoot: ReturnType<typeof vi.fn<() => void>>;

const asked = (path: string) => requests.filter((r) => r.path === path).length;
const polls = () => asked('/api/upgrade/status');
const percent = () => Number(view?.byTestId('upgrading-page')?.dataset.percent ?? NaN);
const phase = () =>
  view?.byTestId('upgrading-failed') ? 'failed' : view?.byTestId('upgrading-page')?.dataset.phase;

async function advance(ms: number) {
  await act(async () => {
    await vi.advanceTimersByTimeAsync(ms);
  });
}

/** Down, 5xx or 401 as the device is now; null when it answers normally. */
function outage(): Response | Promise<Response> | null {
  if (device.state === 'down') return Promise.reject(new TypeError('Failed to fetch'));
  if (device.state === '5xx') return envelope(503, { error: 'HttpError', error_msg: '' });
  if (device.state === 'unauthorized')
    return envelope(401, { error: 'UnauthorizedError', error_msg: 'Unauthorized' });
  return null;
}

function store(id: string | null, saveConfig = true) {
  sessionStorage.setItem(UPGRADE_FROM_KEY, OLD);
  sessionStorage.setItem(UPGRADE_SAVE_CONFIG_KEY, saveConfig ? '1' : '0');
  if (id) sessionStorage.setItem(UPGRADE_ID_KEY, id);
}

async function open() {
  view = await render(<UpgradingPage goRoot={goRoot} />);
}

beforeEach(() => {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
  });
  sessionStorage.clear();
  device = { state: 'up', version: OLD, last: outcome('up-6', 'success'), statusRoute: true };
  goRoot = vi.fn<() => void>();
  ({ requests } = stubFetch({
    '/api/upgrade/status': () => {
      const out = outage();
      if (out) return out;
      if (!device.statusRoute) return envelope(404, { error: 'NotFoundError', error_msg: '' });
      const status: Record<string, unknown> = {
        enabled: true,
        can_install: true,
        in_progress: false,
      };
      if (device.last !== undefined) status.last_upgrade = device.last;
      return envelope(200, status);
    },
    '/api/upgrade/version': () =>
      outage() ?? envelope(200, { version: device.version, model: 'RM1' }),
  }));
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.useRealTimers();
  vi.unstubAllGlobals();
  sessionStorage.clear();
  document.body.innerHTML = '';
});

describe('/upgrading (SPEC 2, SPEC 9 timings)', () => {
  it('starts polling after 2 s, rises toward 99 % over about 82 s and holds there', async () => {
    store(ID);
    await open();
    expect(view?.container.textContent).toContain(en.upgrading.doNotRefresh);
    await advance(1_900);
    expect(polls()).toBe(0);
    await advance(200);
    expect(polls()).toBe(1);
    await advance(1_000);
    expect(polls()).toBe(2);

    await advance(41_000 - 3_100);
    expect(percent()).toBeGreaterThanOrEqual(48);
    expect(percent()).toBeLessThanOrEqual(50);
    await advance(41_000);
    expect(percent()).toBe(99);
    // The device still answers without this upgrade's outcome and never restarted: keep waiting.
    await advance(60_000);
    expect(percent()).toBe(99);
    expect(phase()).toBe('running');
    expect(goRoot).not.toHaveBeenCalled();
    expect(asked('/api/upgrade/version')).toBe(0);
  });

  it("done by id: the outcome 'success' under the started id, not merely another version", async () => {
    store(ID);
    await open();
    await advance(3_000);
    device.state = 'down';
    await advance(5_000);
    // The new version listens before the launcher has seen it ready: no outcome yet.
    device = { ...device, state: 'up', version: NEW };
    await advance(3_000);
    expect(phase()).toBe('running');
    device.last = outcome(ID, 'success');
    await advance(1_000);
    expect(view?.container.textContent).toContain(en.upgrading.success);
    expect(percent()).toBe(100);
    expect(goRoot).not.toHaveBeenCalled();
    await advance(1_000);
    expect(goRoot).toHaveBeenCalledTimes(1);
    // Polling stopped.
    const n = polls();
    await advance(5_000);
    expect(polls()).toBe(n);
  });

  it("failed by id: main.upgradeFailed with its tips and the device's reason, OK to the root", async () => {
    store(ID);
    await open();
    await advance(3_000);
    device.state = 'down';
    await advance(10_000);
    device = { ...device, state: 'up', version: OLD, last: outcome(ID, 'failed', REASON) };
    await advance(1_000);
    const failed = view?.byTestId('upgrading-failed');
    expect(failed?.textContent).toContain(en.main.upgradeFailed);
    expect(failed?.textContent).toContain(en.upgrading.failedTips);
    expect(view?.byTestId('upgrading-reason')?.textContent).toBe(REASON);
    expect(goRoot).not.toHaveBeenCalled();
    await act(async () => view?.byTestId('upgrading-ok')?.click());
    expect(goRoot).toHaveBeenCalledTimes(1);
  });

  it("failed by id in the Chinese console: the reason key in Chinese, not the server's English", async () => {
    await act(() => i18n.changeLanguage('zh'));
    try {
      store(ID);
      await open();
      await advance(3_000);
      device.state = 'down';
      await advance(10_000);
      device = {
        ...device,
        state: 'up',
        version: OLD,
        last: { ...outcome(ID, 'failed', REASON), reason_key: { code: 'exited', exit_code: 1 } },
      };
      await advance(1_000);
      const text = view?.byTestId('upgrading-reason')?.textContent;
      expect(text).toBe(
        zh.upgrade.rollback.exited.replace('{{version}}', NEW).replace('{{code}}', '1'),
      );
      expect(text).not.toContain('exited');
    } finally {
      await act(() => i18n.changeLanguage('en'));
    }
    // The same outcome in English: the key's English text.
    expect(view?.byTestId('upgrading-reason')?.textContent).toBe(
      `${NEW} exited with code 1 before it was ready`,
    );
  });

  it('the outcome decides even when the outage fell between two polls', async () => {
    store(ID);
    device.last = outcome(ID, 'failed', REASON);
    await open();
    await advance(2_100);
    expect(view?.byTestId('upgrading-reason')?.textContent).toBe(REASON);
  });

  it('5xx and no answer are the device restarting: polling goes on', async () => {
    store(ID);
    await open();
    await advance(3_000);
    device.state = '5xx';
    await advance(10_000);
    device.state = 'down';
    await advance(10_000);
    expect(phase()).toBe('running');
    const n = polls();
    await advance(3_000);
    expect(polls()).toBeGreaterThanOrEqual(n + 2);
    device = { ...device, state: 'up', version: NEW, last: outcome(ID, 'success') };
    await advance(1_000);
    expect(phase()).toBe('done');
  });

  it('save_config=false: a 401 from the new version (fresh data folder) is done', async () => {
    store(ID, false);
    await open();
    await advance(3_000);
    device.state = 'down';
    await advance(5_000);
    device.state = 'unauthorized';
    await advance(1_000);
    expect(phase()).toBe('done');
    await advance(1_000);
    expect(goRoot).toHaveBeenCalledTimes(1);
  });

  it('a 401 with the settings kept is not taken for done', async () => {
    store(ID, true);
    await open();
    await advance(3_000);
    device.state = 'unauthorized';
    await advance(5_000);
    expect(phase()).toBe('running');
  });

  it('an outcome that never comes: back for 40 s without it, the version decides', async () => {
    store(ID);
    await open();
    await advance(3_000);
    device.state = 'down';
    await advance(5_000);
    device = { ...device, state: 'up', version: OLD, last: null };
    await advance(39_000);
    expect(phase()).toBe('running');
    expect(asked('/api/upgrade/version')).toBe(0);
    await advance(2_000);
    expect(phase()).toBe('failed');
    expect(view?.byTestId('upgrading-reason')).toBeNull();
  });

  it('gives up after 10 minutes without an answer either way', async () => {
    store(ID);
    await open();
    await advance(3_000);
    device.state = 'down';
    await advance(10 * 60_000);
    expect(phase()).toBe('failed');
  });
});

describe('/upgrading without an id (another tab, a device without outcomes): versions decide', () => {
  it('no id stored: another version answering is done', async () => {
    store(null);
    await open();
    await advance(3_000);
    // The status's outcome belongs to some earlier upgrade: not this page's to judge by.
    expect(phase()).toBe('running');
    device.state = 'down';
    await advance(5_000);
    device = { ...device, state: 'up', version: NEW };
    await advance(1_000);
    expect(phase()).toBe('done');
    await advance(1_000);
    expect(goRoot).toHaveBeenCalledTimes(1);
  });

  it('a status without last_upgrade: the old version back after a restart is a rollback', async () => {
    store(ID);
    device.last = undefined;
    await open();
    await advance(3_000);
    expect(phase()).toBe('running');
    device.state = 'down';
    await advance(10_000);
    device.state = 'up';
    await advance(1_000);
    expect(view?.byTestId('upgrading-failed')?.textContent).toContain(en.main.upgradeFailed);
    expect(view?.byTestId('upgrading-reason')).toBeNull();
  });

  it('a device without /upgrade/status: its version is polled instead', async () => {
    store(ID);
    device.statusRoute = false;
    await open();
    await advance(4_000);
    expect(asked('/api/upgrade/version')).toBeGreaterThanOrEqual(1);
    expect(phase()).toBe('running');
    device.state = 'down';
    await advance(3_000);
    device = { ...device, state: 'up', version: NEW };
    await advance(1_000);
    expect(phase()).toBe('done');
  });

  it('no id and save_config=false: a 401 is done', async () => {
    store(null, false);
    await open();
    await advance(3_000);
    device.state = 'down';
    await advance(3_000);
    device.state = 'unauthorized';
    await advance(1_000);
    expect(phase()).toBe('done');
  });
});
