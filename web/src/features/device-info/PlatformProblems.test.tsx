import { afterEach, describe, expect, it } from 'vitest';
import { act } from 'react';
import type { InfoResult } from '@kvm/protocol/events';
import en from '../../i18n/en.json';
import { flush, render, type Rendered } from '../../test/render';
import { applyInfo, useInfo } from './info-store';
import { PlatformProblems } from './PlatformProblems';

function platform(problems: string[]): Pick<InfoResult, 'system'> {
  return {
    system: {
      platform: {
        type: 'gadget',
        base: 'USB gadget',
        model: 'RM1',
        serial: '',
        video: null,
        board: null,
        problems,
        udc: null,
      },
    } as InfoResult['system'],
  };
}

describe('PlatformProblems', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    useInfo.setState({}, true);
  });

  it('shows nothing while the device has no problem or none is known yet', async () => {
    view = await render(<PlatformProblems />);
    expect(view.byTestId('platform-problems')).toBeNull();
    act(() => applyInfo(platform([])));
    await flush(1);
    expect(view.byTestId('platform-problems')).toBeNull();
  });

  it("lists the server's sentences under a translated title, and a new list shows after a close", async () => {
    view = await render(<PlatformProblems />);
    const udc = 'No USB device controller (UDC) in /sys/class/udc';
    act(() => applyInfo(platform([udc, 'Kernel module usb_f_mass_storage is missing'])));
    await flush(1);
    const banner = view.byTestId('platform-problems');
    expect(banner?.textContent).toContain(en.status.platformProblems);
    expect([...(banner?.querySelectorAll('li') ?? [])].map((li) => li.textContent)).toEqual([
      udc,
      'Kernel module usb_f_mass_storage is missing',
    ]);
    act(() => banner?.querySelector<HTMLElement>('.ant-alert-close-icon')?.click());
    await flush(1);
    expect(view.byTestId('platform-problems')).toBeNull();
    // the same list again stays closed; a different one shows
    act(() => applyInfo(platform([udc, 'Kernel module usb_f_mass_storage is missing'])));
    await flush(1);
    expect(view.byTestId('platform-problems')).toBeNull();
    act(() => applyInfo(platform([udc])));
    await flush(1);
    expect(view.byTestId('platform-problems')?.querySelectorAll('li')).toHaveLength(1);
  });
});
