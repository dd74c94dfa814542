/**
 * The devices selected on the device list (kept across pages and screens: a batch action or a
 * rollout targets "the current selection"). Ids with their names, for the confirmation.
 */
import { create } from 'zustand';

export interface SelectionState {
  selected: Map<string, string>;
}

export const useSelection = create<SelectionState>(() => ({ selected: new Map() }));

export function setSelected(rows: Array<{ id: string; name: string }>, on: boolean): void {
  const next = new Map(useSelection.getState().selected);
  for (const r of rows) {
    if (on) next.set(r.id, r.name);
    else next.delete(r.id);
  }
  useSelection.setState({ selected: next });
}

export function clearSelection(): void {
  useSelection.setState({ selected: new Map() });
}
