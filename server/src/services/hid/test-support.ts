/** Shared by the HID tests (not shipped): what a recorded testbed report stream leaves down. */
import type { TestbedReport } from '../../drivers/hid/testbed';

/** Keys the reports pressed and never released. */
export function stillPressed(reports: readonly TestbedReport[]): string[] {
  return leftDown(reports, (r) => (r.kind === 'key' ? [r.key, r.pressed] : null));
}

/** Mouse buttons the reports pressed and never released. */
export function buttonsStillDown(reports: readonly TestbedReport[]): string[] {
  return leftDown(reports, (r) => (r.kind === 'button' ? [r.button, r.pressed] : null));
}

function leftDown(
  reports: readonly TestbedReport[],
  read: (r: TestbedReport) => [string, boolean] | null,
): string[] {
  const down = new Set<string>();
  for (const r of reports) {
    const change = read(r);
    if (!change) continue;
    if (change[1]) down.add(change[0]);
    else down.delete(change[0]);
  }
  return [...down];
}
