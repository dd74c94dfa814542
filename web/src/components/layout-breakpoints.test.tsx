/**
 * SPEC 9's breakpoints (1366 middle, 1920 large) and loading icon sizes (large version from 48,
 * default 140) as the layout uses them (lib/layout-rules.ts, LoadingIcon, ToolButton).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import { SettingOutlined } from '@ant-design/icons';
import { layoutRules } from '../lib/layout-rules';
import { describeViewport } from '../lib/viewport';
import { flush, render, type Rendered } from '../test/render';
import { FullscreenSpinner } from './FullscreenSpinner';
import { LoadingIcon, loadingIconVariant } from './LoadingIcon';
import { ToolButton } from './ToolButton';

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
});

function setWindowWidth(width: number) {
  Object.defineProperty(window, 'innerWidth', { configurable: true, value: width });
  window.dispatchEvent(new Event('resize'));
}

describe('layout breakpoints', () => {
  it('floats the left panel below 1366, docks it from 1366, labels the toolbar from 1920', () => {
    const at = (width: number) => layoutRules(describeViewport(width, 900));
    expect(at(800)).toEqual({ panel: 'floating', toolbarLabels: false });
    expect(at(1365)).toEqual({ panel: 'floating', toolbarLabels: false });
    expect(at(1366)).toEqual({ panel: 'docked', toolbarLabels: false });
    expect(at(1919)).toEqual({ panel: 'docked', toolbarLabels: false });
    expect(at(1920)).toEqual({ panel: 'docked', toolbarLabels: true });
  });

  it('toolbar buttons carry their label from 1920 px and lose it below (after the 300 ms debounce)', async () => {
    setWindowWidth(1920);
    view = await render(
      <ToolButton title="Settings" icon={<SettingOutlined />} onClick={() => {}} testId="tb" />,
    );
    expect(view.byTestId('tb')?.textContent).toBe('Settings');
    await act(async () => setWindowWidth(1366));
    for (let i = 0; i < 100 && view.byTestId('tb')?.textContent !== ''; i += 1) {
      await new Promise((r) => setTimeout(r, 20));
      await flush(1);
    }
    expect(view.byTestId('tb')?.textContent).toBe('');
    expect(view.byTestId('tb')?.getAttribute('aria-label')).toBe('Settings');
  });
});

describe('loading icon', () => {
  it('uses the large version from 48 px', () => {
    expect(loadingIconVariant(47)).toBe('small');
    expect(loadingIconVariant(48)).toBe('large');
    expect(loadingIconVariant(140)).toBe('large');
  });

  it('is 140 px and large by default, small and inline at 24 px', async () => {
    view = await render(
      <>
        <LoadingIcon testId="default" />
        <LoadingIcon testId="inline" size={24} />
      </>,
    );
    const big = view.byTestId('default');
    expect(big?.dataset['variant']).toBe('large');
    expect(big?.querySelector('svg')?.getAttribute('width')).toBe('140');
    const small = view.byTestId('inline');
    expect(small?.dataset['variant']).toBe('small');
    expect(small?.querySelector('svg')).not.toBeNull(); // the antd glyph
    expect(small?.style.width).toBe('24px');
  });

  it('is the full-screen loading spinner of the app shell', async () => {
    view = await render(<FullscreenSpinner />);
    const icon = view.byTestId('app-loading-icon');
    expect(icon?.dataset['variant']).toBe('large');
    expect(icon?.dataset['size']).toBe('140');
    expect(view.byTestId('app-loading')?.textContent).toContain('Loading');
  });
});
