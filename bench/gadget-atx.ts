/**
 * The gadget bench's ATX over GPIO figures (issue 24; docs/hardware.md "GPIO: gpio-sim"), called
 * by bench/gadget.ts with its booted device VM:
 * - atx_pulse_ms: a short press (POST /api/atx/click?button=power&wait=1) as the simulated power
 *   button line shows it, rise to fall, read by the observer inside the VM every millisecond or
 *   so (median of ATX_PRESSES; SPEC's short press is 500 ms, the tolerance ±20).
 * - atx_pulse_max_error_ms: the largest |pulse - 500| of those presses.
 * - atx_pulse_bound_ms: the largest sampling bound of those pulses (the observer's gap before
 *   each edge, summed: how far the true length can be from the sampled one).
 * - atx_pulse_vm_starved_ms: the most that one of QEMU's threads waited for a CPU of this host
 *   between a pulse's two edges (their arrival here; e2e/fixtures/device-vm.ts hostStarvedMs),
 *   largest over the presses: gpioset's wake at the end of its 500 ms can be that late under
 *   TCG on a loaded host, which a real board does not have. An error far above it is the
 *   driver's; one within it may be the host's.
 */
import { hostStarvedMs, type DeviceVm, type DeviceVmEvent } from '../e2e/fixtures/device-vm';
import { median, note, round, sized } from './lib';

const ATX_PRESSES = sized(5, 2);
const SHORT_MS = 500;

export async function atxFigures(
  vm: DeviceVm,
  token: string,
): Promise<Record<string, number | null>> {
  // the driver holds its lines once the chip and the lines are there
  const deadline = performance.now() + 120_000;
  for (;;) {
    const res = await vm.request('/api/atx', { headers: { token } });
    const state = (JSON.parse(res.body) as { result?: { problem?: string | null } }).result;
    if (state?.problem === null) break;
    if (performance.now() > deadline) {
      throw new Error(`ATX over GPIO not online: ${res.body}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  note(`gadget: ${ATX_PRESSES} short ATX presses on the simulated line`);
  const line = 'atx-power-button';
  await vm.command('gpio-watch', { chip: 'kvm-atx', line });
  const pulses: number[] = [];
  const bounds: number[] = [];
  const starved: number[] = [];
  try {
    for (let i = 0; i < ATX_PRESSES; i++) {
      const since = vm.mark();
      const res = await vm.request('/api/atx/click?button=power&wait=1', {
        method: 'POST',
        headers: { token },
      });
      if (res.status !== 200) throw new Error(`atx click: ${res.status} ${res.body}`);
      const pulse = await vm.waitFor((e) => e.ev === 'gpio-pulse' && e['line'] === line, 60_000, {
        since,
        what: `the pulse on ${line}`,
      });
      pulses.push(Number(pulse['ms']));
      bounds.push(Number(pulse['boundMs']));
      // the observer emits the fall's edge, then the pulse: its two edges came before it
      const edges = vm.events
        .slice(since)
        .filter((e: DeviceVmEvent) => e.ev === 'gpio-edge' && e['line'] === line);
      const fall = edges.findLast((e) => e['value'] === 0);
      const rise = edges.findLast((e) => e['value'] === 1 && fall !== undefined && e.t < fall.t);
      if (rise && fall) starved.push(hostStarvedMs(rise, fall));
    }
  } finally {
    await vm.command('gpio-unwatch', { chip: 'kvm-atx', line });
  }
  return {
    atx_pulse_ms: round(median(pulses), 1),
    atx_pulse_max_error_ms: round(Math.max(...pulses.map((p) => Math.abs(p - SHORT_MS))), 1),
    atx_pulse_bound_ms: round(Math.max(...bounds), 1),
    atx_pulse_vm_starved_ms: starved.length ? round(Math.max(...starved), 1) : null,
    atx_pulse_samples: pulses.length,
  };
}
