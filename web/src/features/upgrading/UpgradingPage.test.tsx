import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import en from '../../i18n/en.json';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { render, type Rendered } from '../../test/render';
import { UPGRADE_FROM_KEY } from '../upgrade/upgrade-store';
import UpgradingPage from './UpgradingPage';

const OLD = 'V1.2.0 release1';
const NEW = 'V1.3.0 release1';

let view: Rendered | undefined;
let requests: RecordedRequest[];
/** What the device does when asked its version: answer one, or be gone. */
let device: { version: string } | 'down';
let goRoot: ReturnType<typeof vi.fn<() => void>>;

const polls = () => requests.filter((r) => r.path === '/api/upgrade/version').length;
const percent = () => Number(view?.byTestId('upgrading-page')?.dataset.percent ?? NaN);

async function advance(ms: number) {
  await act(async () => {
    await vi.advanceTimersByTimeAsync(ms);
  });
}

beforeEach(() => {
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
  });
  sessionStorage.clear();
  sessionStorage.setItem(UPGRADE_FROM_KEY, OLD);
  device = { version: OLD };
  goRoot = vi.fn<() => void>();
  ({ requests } = stubFetch({
    '/api/upgrade/version': () => {
      if (device === 'down') return Promise.reject(new TypeError('Failed to fetch'));
      return envelope(200, { version: device.version, model: 'RM1' });
    },
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
    view = await render(<UpgradingPage goRoot={goRoot} />);
    expect(view.container.textContent).toContain(en.upgrading.doNotRefresh);
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
    // The device still answers the old version without having restarted: keep waiting.
    await advance(60_000);
    expect(percent()).toBe(99);
    expect(view.byTestId('upgrading-page')?.dataset.phase).toBe('running');
    expect(goRoot).not.toHaveBeenCalled();
  });

  it('on a new version: success message, 100 %, reload to the root after 1 s', async () => {
    view = await render(<UpgradingPage goRoot={goRoot} />);
    await advance(3_000);
    device = 'down';
    await advance(5_000);
    expect(view.byTestId('upgrading-page')?.dataset.phase).toBe('running');
    device = { version: NEW };
    await advance(1_000);
    expect(view.container.textContent).toContain(en.upgrading.success);
    expect(percent()).toBe(100);
    expect(goRoot).not.toHaveBeenCalled();
    await advance(1_000);
    expect(goRoot).toHaveBeenCalledTimes(1);
    // Polling stopped.
    const asked = polls();
    await advance(5_000);
    expect(polls()).toBe(asked);
  });

  it('the old version back after a restart (rollback): main.upgradeFailed with tips and OK', async () => {
    view = await render(<UpgradingPage goRoot={goRoot} />);
    await advance(3_000);
    device = 'down';
    await advance(10_000);
    device = { version: OLD };
    await advance(1_000);
    const failed = view.byTestId('upgrading-failed');
    expect(failed?.textContent).toContain(en.main.upgradeFailed);
    expect(failed?.textContent).toContain(en.upgrading.failedTips);
    expect(goRoot).not.toHaveBeenCalled();
    await act(async () => view?.byTestId('upgrading-ok')?.click());
    expect(goRoot).toHaveBeenCalledTimes(1);
  });
});
