/**
 * What SPEC 9's breakpoints change in the main layout (docs/console.md "Layout"):
 *
 * | width            | size   | left panel (320 px)                  | toolbar             |
 * |------------------|--------|--------------------------------------|---------------------|
 * | below 1366       | small  | floats over the remote screen        | icons with tooltips |
 * | 1366 to 1919     | middle | docked beside the remote screen      | icons with tooltips |
 * | 1920 and more    | large  | docked                               | icons and labels    |
 *
 * Below 1366 a docked panel would take a quarter of the width from the remote screen (a
 * 1280-wide laptop keeps 960 px); from 1920 there is room to name each toolbar button.
 */
import type { Viewport } from './viewport';

export interface LayoutRules {
  panel: 'docked' | 'floating';
  toolbarLabels: boolean;
}

export function layoutRules(viewport: Pick<Viewport, 'size'>): LayoutRules {
  return {
    panel: viewport.size === 'small' ? 'floating' : 'docked',
    toolbarLabels: viewport.size === 'large',
  };
}
