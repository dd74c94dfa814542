/** Test helpers for the device-administration groups (antd Select and inputs in happy-dom). */
import { act } from 'react';
import { typeInto } from '../../test/dom';
import { flush, type Rendered } from '../../test/render';

export { typeInto };

/** Opens the antd Select with this test id and clicks the option with this label. */
export async function chooseOption(view: Rendered, testId: string, label: string): Promise<void> {
  const root = view.byTestId(testId);
  const selector = root?.querySelector('.ant-select-selector') ?? root;
  if (!selector) throw new Error(`no select ${testId}`);
  act(() => {
    selector.dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
  });
  await flush();
  const find = () => {
    const options = [...document.querySelectorAll<HTMLElement>('.ant-select-item-option')];
    return {
      options,
      option: options.find((o) => o.getAttribute('title') === label || o.textContent === label),
    };
  };
  let { options, option } = find();
  const search = root?.querySelector('input');
  if (!option && search) {
    // A long list is virtual: only the first options exist until a search narrows it.
    typeInto(search, label);
    await flush();
    ({ options, option } = find());
  }
  if (!option) {
    throw new Error(`no option ${label} in ${options.map((o) => o.textContent).join(', ')}`);
  }
  act(() => option.click());
  await flush();
}

export function click(view: Rendered, testId: string): void {
  const element = view.byTestId(testId);
  if (!element) throw new Error(`no ${testId}`);
  const target =
    element.tagName === 'INPUT' ? element : (element.querySelector('input') ?? element);
  act(() => target.click());
}
