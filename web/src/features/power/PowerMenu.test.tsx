import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act } from 'react';
import en from '../../i18n/en.json';
import { envelope, stubFetch } from '../../test/fetch-stub';
import { pressAsync as click, waitForSelector as waitFor } from '../../test/dom';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { applyAtx, resetAtxForTests } from './atx-store';
import { PowerMenu } from './PowerMenu';

const PROBLEM = 'reset button (gpiochip0 line 27) is held by another process';

let view: Rendered | undefined;

beforeEach(() => {
  resetAtxForTests();
  stubFetch({
    '/api/atx': () =>
      envelope(200, {
        enabled: true,
        busy: false,
        acts: { power: false, reset: false },
        leds: { power: false, hdd: false },
        power: 'off',
        problem: PROBLEM,
      }),
  });
});

afterEach(() => {
  view?.unmount();
  view = undefined;
  vi.unstubAllGlobals();
  document.body.innerHTML = '';
});

describe('PowerMenu over GPIO', () => {
  it("says why ATX cannot act (the state's problem) and greys the buttons until it clears", async () => {
    view = await renderPanel(<PowerMenu />);
    await flush();
    await click(view.byTestId('toolbar-power'));
    const problem = await waitFor('[data-testid="power-problem"]');
    expect(problem.textContent).toBe(`${en.power.offline}: ${PROBLEM}`);
    const short = await waitFor('[data-testid="power-short"]');
    expect(short.closest('li')?.getAttribute('aria-disabled')).toBe('true');
    act(() => applyAtx({ problem: null }));
    await flush();
    expect(document.querySelector('[data-testid="power-problem"]')).toBeNull();
    expect(
      document
        .querySelector('[data-testid="power-short"]')
        ?.closest('li')
        ?.getAttribute('aria-disabled'),
    ).not.toBe('true');
  });
});
