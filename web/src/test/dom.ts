/** Test helpers for the DOM in happy-dom: typing into a field and clicking the way React notices. */
import { act } from 'react';

/**
 * Sets a text field's value the way React notices (the prototype's setter, then `input`). Takes
 * the input or textarea itself, or an element with one inside (antd wraps its fields).
 */
export function typeInto(el: Element | null | undefined, value: string): void {
  const field =
    el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement
      ? el
      : el?.querySelector('input, textarea');
  if (!(field instanceof HTMLInputElement || field instanceof HTMLTextAreaElement)) {
    throw new Error('no text field');
  }
  const proto =
    field instanceof HTMLTextAreaElement
      ? HTMLTextAreaElement.prototype
      : HTMLInputElement.prototype;
  const setter = Object.getOwnPropertyDescriptor(proto, 'value')?.set;
  act(() => {
    setter?.call(field, value);
    field.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

/** Clicks inside act; a missing element fails the test here rather than later. */
export function click(el: Element | null | undefined): void {
  if (!(el instanceof HTMLElement)) throw new Error('no element');
  act(() => el.click());
}

/** Clicks inside an async act: antd menus and modals mount what the click opens in a microtask. */
export async function pressAsync(el: Element | null | undefined): Promise<void> {
  if (!(el instanceof HTMLElement)) throw new Error('no element');
  await act(async () => el.click());
}

/**
 * The element once it is there; lazy chunks take longer than a few ticks to import (seconds on a
 * loaded machine), so this waits by time.
 */
export async function waitForSelector(selector: string, ms = 15_000): Promise<HTMLElement> {
  const deadline = Date.now() + ms;
  for (;;) {
    const el = document.querySelector<HTMLElement>(selector);
    if (el) return el;
    if (Date.now() > deadline) throw new Error(`${selector} never appeared`);
    await act(async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
    });
  }
}
