import { afterEach, describe, expect, it } from 'vitest';
import en from '../../i18n/en.json';
import { render, type Rendered } from '../../test/render';
import { StatusBar } from './StatusBar';

describe('StatusBar stream state', () => {
  let view: Rendered | undefined;
  afterEach(() => view?.unmount());

  it('keeps status-stream and says inactive while nothing plays', async () => {
    view = await render(<StatusBar />);
    const item = view.byTestId('status-stream');
    expect(item?.textContent).toBe(`${en.status.stream}: ${en.status.inactive}`);
    expect(item?.dataset['status']).toBe('inactive');
    expect(view.byTestId('status-stream-info')).toBeNull();
  });
});
