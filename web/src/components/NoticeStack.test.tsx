import { afterEach, describe, expect, it } from 'vitest';
import { render, type Rendered } from '../test/render';
import { NoticeStackHost, NOTICE_STACK_STYLE, StackedNotice } from './NoticeStack';

describe('NoticeStack', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
  });

  it('puts every notice into the one column of the host, each in its own row', async () => {
    view = await render(
      <NoticeStackHost>
        <div style={{ position: 'relative' }}>
          <StackedNotice>
            <div data-testid="a">tip</div>
          </StackedNotice>
        </div>
        <StackedNotice>
          <div data-testid="b">fallback</div>
        </StackedNotice>
      </NoticeStackHost>,
    );
    const stack = view.byTestId('notice-stack');
    expect(stack?.contains(view.byTestId('a'))).toBe(true);
    expect(stack?.contains(view.byTestId('b'))).toBe(true);
    expect(stack?.children).toHaveLength(2);
    expect(NOTICE_STACK_STYLE).toMatchObject({ display: 'flex', flexDirection: 'column' });
  });

  it('leaves a notice in place without a host', async () => {
    view = await render(
      <div data-testid="here">
        <StackedNotice>
          <div data-testid="a">tip</div>
        </StackedNotice>
      </div>,
    );
    expect(view.byTestId('here')?.contains(view.byTestId('a'))).toBe(true);
  });
});
