/** State of the main layout (SPEC 2 "App shell"). */
import { create } from 'zustand';

/** SPEC 2: the left panel shows one of these sections, or none. */
export type LeftPanelSection = 'settings' | 'toolbox' | 'externalDevices' | 'none';

export interface LayoutState {
  leftPanel: LeftPanelSection;
  toolbarCollapsed: boolean;
}

/** The remote screen gets the whole width until a toolbar button opens a section. */
export const useLayout = create<LayoutState>(() => ({
  leftPanel: 'none',
  toolbarCollapsed: false,
}));

/** Opens the section, or closes the panel when it is the one showing. */
export function toggleLeftPanel(section: Exclude<LeftPanelSection, 'none'>): void {
  useLayout.setState((s) => ({ leftPanel: s.leftPanel === section ? 'none' : section }));
}

export function setToolbarCollapsed(collapsed: boolean): void {
  useLayout.setState({ toolbarCollapsed: collapsed });
}
